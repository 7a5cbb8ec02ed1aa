/**
 * widget.js: `<script src="<service>/widget.js" data-url="<signed page url>"></script>`
 * puts the referral page in an iframe right after the script tag. The page
 * posts its height; the iframe takes it, so it never shows a scrollbar.
 * Only messages from that iframe's window and origin are believed.
 */
export const WIDGET_JS = `(function () {
	var script = document.currentScript;
	var url = script && script.getAttribute("data-url");
	if (!url) return;
	var frame = document.createElement("iframe");
	frame.src = url;
	frame.title = script.getAttribute("data-title") || "Referral page";
	frame.style.cssText = "display:block;width:100%;min-height:320px;border:0;";
	var origin = new URL(url, document.baseURI).origin;
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
