import js from "@eslint/js";
import tseslint from "typescript-eslint";

export default tseslint.config(
  { ignores: ["node_modules/", "sdk/dist/", ".data/", "**/*.js", "!eslint.config.js"] },
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
  { files: ["test/**", "bench/**", "server/cli.ts"], rules: { "no-console": "off", "@typescript-eslint/no-unused-expressions": "off" } },
);
