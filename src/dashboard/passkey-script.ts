/**
 * The passkey pages' script (after webauthn.js, @simplewebauthn/browser's
 * bundle, which defines SimpleWebAuthnBrowser): shows the passkey forms when
 * the browser has WebAuthn, and on submit asks the form's `data-options`
 * route for the ceremony's options, runs the browser's ceremony, and posts
 * its answer in the form's `response` field, so the result is an ordinary page.
 */
export const PASSKEY_SCRIPT = `
(() => {
  const lib = window.SimpleWebAuthnBrowser;
  const supported = !!lib && lib.browserSupportsWebAuthn();
  document.querySelectorAll("form[data-passkey]").forEach((form) => {
    if (!supported) return;
    form.hidden = false;
    form.addEventListener("submit", async (event) => {
      event.preventDefault();
      const error = form.querySelector("[data-passkey-error]");
      const button = form.querySelector("button[type=submit]");
      error.hidden = true;
      button.disabled = true;
      try {
        const body = new URLSearchParams({ _csrf: form.querySelector("input[name=_csrf]").value });
        const res = await fetch(form.dataset.options, { method: "POST", body, credentials: "same-origin" });
        const options = await res.json();
        if (!res.ok) throw new Error(options.error || "The passkey prompt could not start.");
        const answer = form.dataset.passkey === "register"
          ? await lib.startRegistration({ optionsJSON: options })
          : await lib.startAuthentication({ optionsJSON: options });
        form.querySelector("input[name=response]").value = JSON.stringify(answer);
        HTMLFormElement.prototype.submit.call(form);
      } catch (err) {
        error.textContent = (err && err.name === "NotAllowedError")
          ? "The passkey prompt was closed or timed out. Try again."
          : String((err && err.message) || err);
        error.hidden = false;
        button.disabled = false;
      }
    });
  });
})();
`;
