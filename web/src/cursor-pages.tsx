// Cursor pages as the lists of this API give them: forward with `next_cursor`, back through the
// cursors already seen (the API has no "previous"), and back to the first page when filters change.
import { useState } from "react";

export function useCursorPages() {
  // cursors[i] opens page i; page 0 has none.
  const [cursors, setCursors] = useState<(string | undefined)[]>([undefined]);
  return {
    cursor: cursors[cursors.length - 1],
    isFirst: cursors.length === 1,
    next: (cursor: string) => setCursors([...cursors, cursor]),
    previous: () => setCursors(cursors.slice(0, -1)),
    reset: () => setCursors([undefined]),
  };
}

export function PageButtons({ pages, nextCursor }: { pages: ReturnType<typeof useCursorPages>; nextCursor: string | null | undefined }) {
  return (
    <nav aria-label="Pages" className="actions">
      <button type="button" disabled={pages.isFirst} onClick={pages.previous}>
        Previous page
      </button>
      <button type="button" disabled={!nextCursor} onClick={() => nextCursor && pages.next(nextCursor)}>
        Next page
      </button>
    </nav>
  );
}
