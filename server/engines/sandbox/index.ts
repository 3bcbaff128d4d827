// Building the sandbox engine for a gateway process: its reports go to this gateway's own callback
// URL for the connection, derived when needed (the sandbox stores no URLs, they carry tokens), and
// a send's receipts to this gateway's callback service directly.
import type { DataSource } from "typeorm";
import type { Config } from "../../config.js";
import type { DatabaseListener } from "../../db/listener.js";
import { callbackToken, callbackUrl } from "../../connections/callback-token.js";
import { Connection } from "../../connections/entities.js";
import type { Logger } from "../../logger.js";
import type { ProviderCallbackService } from "../../provider/service.js";
import { SandboxEngine, SANDBOX_ENGINE } from "./engine.js";

export { SandboxEngine, SANDBOX_ENGINE } from "./engine.js";
export { sandboxControl, SANDBOX_CONTROL_PATH } from "./control.js";

export function createSandboxEngine(deps: { db: DataSource; config: Config; logger: Logger; callbacks?: ProviderCallbackService; listener?: DatabaseListener }): SandboxEngine {
  const callbacks = deps.callbacks;
  return new SandboxEngine({
    db: deps.db,
    logger: deps.logger,
    ...(deps.listener && { listener: deps.listener }),
    ...(callbacks && { applyReports: (connectionId, events) => callbacks.handleInProcess(SANDBOX_ENGINE, connectionId, events) }),
    mediaPolicy: { allowPrivate: deps.config.webhooks.allowPrivate },
    async callbackUrlFor(connectionId) {
      const c = await deps.db.getRepository(Connection).findOneBy({ id: connectionId });
      if (!c || c.deletedAt) return null;
      // Always the sandbox's own callback path: a connection moved to another engine refuses it.
      return callbackUrl(deps.config.baseUrl, SANDBOX_ENGINE, callbackToken(deps.config.secretKey, c.id, c.callbackNonce));
    },
  });
}
