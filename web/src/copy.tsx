// A secret or payload shown once, with a button that puts it on the clipboard: the person should
// not have to select a 60-character key by hand on a phone.
import { useEffect, useState } from "react";

type Outcome = "copied" | "refused" | null;

/** A copy button for `value`; `what` names it for the button and the announcement ("the API key"). */
export function CopyButton({ value, what }: { value: string; what: string }) {
  const [outcome, setOutcome] = useState<Outcome>(null);
  useEffect(() => {
    if (!outcome) return;
    const timer = setTimeout(() => setOutcome(null), 4_000);
    return () => clearTimeout(timer);
  }, [outcome]);
  const copy = async () => {
    try {
      // Absent outside a secure context (http on an address other than localhost).
      await navigator.clipboard.writeText(value);
      setOutcome("copied");
    } catch {
      setOutcome("refused");
    }
  };
  return (
    <span className="copy">
      <button type="button" className="secondary" onClick={() => void copy()} aria-label={`Copy ${what}`}>
        Copy
      </button>
      <span role="status" className="copy-status">
        {outcome === "copied" ? `Copied ${what}.` : outcome === "refused" ? "The browser refused the clipboard: select the text and copy it." : ""}
      </span>
    </span>
  );
}

/** A value shown in full with its copy button, e.g. a new key. `label` is the value's accessible name. */
export function CopyableValue({ value, label, what }: { value: string; label: string; what: string }) {
  return (
    <span className="copyable">
      <code aria-label={label}>{value}</code>
      <CopyButton value={value} what={what} />
    </span>
  );
}
