/**
 * The dashboard's only script: conveniences on top of pages that work
 * without it ("select all" in the review queue, confirm before rotating keys,
 * the live preview of a campaign's email: the form's Preview button posts to
 * the same route, pages/messages.tsx).
 */
export const SCRIPT = `
document.addEventListener("change", (e) => {
  const t = e.target;
  if (t instanceof HTMLInputElement && t.dataset.selectAll) {
    document.querySelectorAll('input[name="' + t.dataset.selectAll + '"]').forEach((box) => { box.checked = t.checked; });
  }
});
document.addEventListener("submit", (e) => {
  const form = e.target;
  if (form instanceof HTMLFormElement && form.dataset.confirm && !window.confirm(form.dataset.confirm)) e.preventDefault();
});

let previewTimer;
let previewSeq = 0;
document.addEventListener("input", (e) => {
  const form = e.target instanceof Element ? e.target.closest("form[data-live-preview]") : null;
  if (!form) return;
  clearTimeout(previewTimer);
  previewTimer = setTimeout(async () => {
    const seq = ++previewSeq;
    try {
      const res = await fetch(form.dataset.livePreview, { method: "POST", body: new FormData(form), credentials: "same-origin" });
      const fresh = new DOMParser().parseFromString(await res.text(), "text/html").getElementById("preview");
      const current = document.getElementById("preview");
      // Only the newest answer is shown; the section's content changes, so its aria-live announces it.
      if (seq === previewSeq && fresh && current) current.innerHTML = fresh.innerHTML;
    } catch {}
  }, 250);
});
`;
