/** A background loop of the process: started once the gateway is up, stopped before what it uses closes. */
export interface Loop {
  start(): void;
  stop(): Promise<void> | void;
}
