/**
 * The dashboard's only script: conveniences on top of pages that work
 * without it ("select all" in the review queue, confirm before rotating keys).
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
`;
