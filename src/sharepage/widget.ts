/**
 * widget.js: `<script src="<service>/widget.js" data-url="<signed page url>"></script>`
 * puts the referral page in an iframe right after the script tag. The page
 * posts its height; the iframe takes it, so it never shows a scrollbar.
 * Only messages from that iframe's window and origin are believed.
 *
 * data-url is framed only when it is an `https:` URL, or an `http:` URL on
 * the origin of widget.js itself (this service, e.g. under `wrangler dev`) or
 * of the host page. Anything else is refused with a console warning: a
 * `javascript:` or `data:` URL in an iframe's src would run in the host page's
 * origin (an attribute injected into the tag would be XSS), and a plain-http
 * page could be altered on the way.
 */
export const WIDGET_JS = `(function () {
	var script = document.currentScript;
	var raw = script && script.getAttribute("data-url");
	if (!raw) return;
	var page;
	try {
		page = new URL(raw, document.baseURI);
	} catch (e) {
		return;
	}
	var own = script.src ? new URL(script.src, document.baseURI).origin : "";
	var allowed =
		page.protocol === "https:" ||
		(page.protocol === "http:" && (page.origin === own || page.origin === new URL(document.baseURI).origin));
	if (!allowed) {
		if (window.console) console.warn("widget.js: data-url refused: only https: or same-origin page URLs are framed");
		return;
	}
	var frame = document.createElement("iframe");
	frame.src = page.href;
	frame.title = script.getAttribute("data-title") || "Referral page";
	frame.style.cssText = "display:block;width:100%;min-height:320px;border:0;";
	var origin = page.origin;
	window.addEventListener("message", function (event) {
		var data = event.data;
		if (event.source !== frame.contentWindow || event.origin !== origin) return;
		if (!data || data.type !== "referral-page:height" || typeof data.height !== "number") return;
		frame.style.minHeight = "0";
		frame.style.height = Math.max(0, Math.min(data.height, 20000)) + "px";
	});
	script.parentNode.insertBefore(frame, script.nextSibling);
})();
`;
