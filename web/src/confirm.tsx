// A destructive action: a red button that asks first, in the platform's modal dialog. showModal()
// makes the rest of the page inert (focus cannot leave), Escape cancels, and the dialog sits in the
// top layer; no library is needed for that, and none injects a <style> element that the page's
// strict Content-Security-Policy would refuse (docs/decisions.md, "Dashboard: looks").
import { useEffect, useId, useRef, useState, type ReactNode } from "react";

export interface DangerActionProps {
  /** The button's text, e.g. "Delete". */
  label: string;
  /** Its accessible name when the text alone is ambiguous in a list, e.g. "Delete front-desk". */
  name?: string;
  /** The dialog's question, e.g. "Delete front-desk?". */
  title: string;
  /** What happens, said plainly, e.g. "Its phone is unlinked and it stops sending." */
  consequence: ReactNode;
  /** The confirming button's text: the action again, never "OK", e.g. "Delete connection". */
  confirmLabel: string;
  onConfirm: () => void;
  disabled?: boolean;
}

export function DangerAction({ label, name, title, consequence, confirmLabel, onConfirm, disabled }: DangerActionProps) {
  const [open, setOpen] = useState(false);
  return (
    <>
      <button type="button" className="danger" aria-label={name} aria-haspopup="dialog" onClick={() => setOpen(true)} disabled={disabled}>
        {label}
      </button>
      {open && (
        <ConfirmDialog
          title={title}
          confirmLabel={confirmLabel}
          onCancel={() => setOpen(false)}
          onConfirm={() => {
            setOpen(false);
            onConfirm();
          }}
        >
          {consequence}
        </ConfirmDialog>
      )}
    </>
  );
}

/** An alert dialog asking to confirm; open while mounted. Focus starts on Cancel and returns to where it was. */
export function ConfirmDialog({ title, children, confirmLabel, onCancel, onConfirm }: { title: string; children: ReactNode; confirmLabel: string; onCancel: () => void; onConfirm: () => void }) {
  const ref = useRef<HTMLDialogElement>(null);
  const id = useId();
  useEffect(() => {
    const dialog = ref.current!;
    const opener = document.activeElement instanceof HTMLElement ? document.activeElement : null;
    dialog.showModal();
    return () => {
      dialog.close();
      // Back to the button that opened it, when it is still on the page (a deleted row's is not).
      if (opener?.isConnected) opener.focus();
    };
  }, []);
  return (
    <dialog
      ref={ref}
      role="alertdialog"
      aria-modal="true"
      aria-labelledby={`${id}-title`}
      aria-describedby={`${id}-text`}
      className="confirm"
      // Escape: the browser's cancel, which would close the dialog behind React's back.
      onCancel={(e) => {
        e.preventDefault();
        onCancel();
      }}
    >
      <h2 id={`${id}-title`}>{title}</h2>
      <div id={`${id}-text`}>{children}</div>
      <div className="actions">
        {/* The safe choice first: showModal() focuses the first button, so Enter right after opening changes nothing. */}
        <button type="button" className="secondary" onClick={onCancel}>
          Cancel
        </button>
        <button type="button" className="danger solid" onClick={onConfirm}>
          {confirmLabel}
        </button>
      </div>
    </dialog>
  );
}
