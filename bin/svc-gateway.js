#!/usr/bin/env node
// Runs the TypeScript CLI through tsx, so `npx svc-gateway <command>` needs no build step.
import { register } from "tsx/esm/api";

register();
await import("../server/cli-main.ts");
