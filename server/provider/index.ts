// The provider callbacks as the composition root builds them: what engines report, over the HTTP
// callback route (handlers.ts, mounted by the app around the body parser) or in process (the
// Baileys engine). Built before the engines, which report through it.
import type { DataSource } from "typeorm";
import type { Config } from "../config.js";
import { ProviderCallbackService } from "./service.js";

export function createProviderCallbacks(deps: { db: DataSource; config: Pick<Config, "ai"> }): ProviderCallbackService {
  return new ProviderCallbackService(deps.db, { aiDebounceMs: deps.config.ai.debounceMs });
}
