import js from "@eslint/js";
import tseslint from "typescript-eslint";
import reactHooks from "eslint-plugin-react-hooks";

export default tseslint.config(
  // sdk/.types-probe-*.ts: the type generator's scratch module, there only while it runs (CI lints beside the tests).
  { ignores: ["node_modules/", "sdk/dist/", "web/dist/", "test-artifacts/", ".data/", "sdk/.types-probe-*", "**/*.js", "**/*.cjs", "!eslint.config.js"] },
  js.configs.recommended,
  ...tseslint.configs.strict,
  {
    rules: {
      "@typescript-eslint/no-unused-vars": ["error", { argsIgnorePattern: "^_", varsIgnorePattern: "^_" }],
      "@typescript-eslint/no-non-null-assertion": "off",
      "@typescript-eslint/no-extraneous-class": "off",
      "no-console": ["error", { allow: ["error"] }],
    },
  },
  { files: ["web/src/**"], ...reactHooks.configs.flat["recommended-latest"] },
  { files: ["test/**", "bench/**", "server/cli.ts"], rules: { "no-console": "off", "@typescript-eslint/no-unused-expressions": "off" } },
);
