// The messages folder as the composition root builds it: the dispatcher (a loop when
// DISPATCH_ENABLED), sending (deferred sends released by `message.release` jobs), the lifecycle moves, the reads, conversations, and the routes of
// contract.messages and contract.conversations.
import type { DataSource } from "typeorm";
import { messageReleaseJob } from "../../jobs/message-release.js";
import type { Config } from "../config.js";
import type { DatabaseListener } from "../db/listener.js";
import type { EngineRegistry } from "../engines/engine.js";
import type { Foreground } from "../foreground.js";
import type { Logger } from "../logger.js";
import type { Loop } from "../loop.js";
import { conversationsRouter } from "./conversation-handlers.js";
import { Conversations } from "./conversations.js";
import { MessageDispatcher } from "./dispatcher.js";
import { messagesRouter } from "./handlers.js";
import { MessageLifecycle } from "./lifecycle.js";
import { MessageReader } from "./reader.js";
import { MessageSender } from "./send.js";

export function createMessages(deps: { db: DataSource; config: Config; engines: EngineRegistry; logger: Logger; listener: DatabaseListener; foreground: Foreground }) {
  const { db, config, engines, logger, listener, foreground } = deps;
  const dispatcher = new MessageDispatcher(db, config, engines, logger, listener, foreground);
  const wakeDispatcher = () => dispatcher.wake();
  const sender = new MessageSender(db, wakeDispatcher);
  const messageLifecycle = new MessageLifecycle(db, wakeDispatcher);
  const messageReader = new MessageReader({ db, config, engines, logger });
  const conversations = new Conversations({ db, config, engines, sender });
  const loops: Loop[] = config.dispatch.enabled ? [dispatcher] : [];
  return {
    dispatcher,
    sender,
    messageLifecycle,
    messageReader,
    conversations,
    routers: {
      messages: messagesRouter({ sender, lifecycle: messageLifecycle, reader: messageReader }),
      conversations: conversationsRouter(conversations),
    },
    jobs: [messageReleaseJob(messageLifecycle)],
    loops,
  };
}
