// The read side of messages as one service (the REST handlers and the tool endpoint share it): the
// list, one message with its timeline, the CSV export and the number check, in the caller's
// workspace. The statements live in reads.ts and export.ts.
import type { Readable } from "node:stream";
import type { DataSource } from "typeorm";
import type { ExportMessagesQuery, ListMessagesQuery, MessagePage, MessageWithTimeline, NumberCheck, NumberCheckQuery } from "../../contract/index.js";
import type { Config } from "../config.js";
import type { EngineRegistry } from "../engines/engine.js";
import { cursorKey } from "../http/cursor.js";
import type { Logger } from "../logger.js";
import { openMessagesCsv } from "./export.js";
import { checkNumber, getMessage, listMessages } from "./reads.js";

export interface MessageReaderDeps {
  db: DataSource;
  config: Config;
  engines: EngineRegistry;
  logger: Logger;
}

export class MessageReader {
  /** Signs the list's cursors. */
  private readonly cursorKey: Buffer;

  constructor(private readonly deps: MessageReaderDeps) {
    this.cursorKey = cursorKey(deps.config.secretKey);
  }

  list(workspaceId: string, query: ListMessagesQuery): Promise<MessagePage> {
    return listMessages(this.deps.db, this.cursorKey, workspaceId, query);
  }

  get(workspaceId: string, id: string): Promise<MessageWithTimeline> {
    return getMessage(this.deps.db, workspaceId, id);
  }

  exportCsv(workspaceId: string, query: ExportMessagesQuery): Promise<Readable> {
    return openMessagesCsv(this.deps.db, workspaceId, query);
  }

  /** `log`: the request's logger, so that a failed check is logged with its request id. */
  checkNumber(workspaceId: string, input: NumberCheckQuery, log: Logger = this.deps.logger): Promise<NumberCheck> {
    return checkNumber({ ...this.deps, logger: log }, workspaceId, input);
  }
}
