/**
 * The contract's text conventions (docs/api.md, "Text encoding"): the service
 * URL-decodes every request text once, so the client sends each text
 * percent-encoded and a `+` or `%` the user typed arrives as typed; campaign
 * texts and terms come back form-URL-encoded and are decoded here.
 */

/** Fields never decoded by the service: sent as they are. */
const PLAIN = new Set(["apikey", "privatekey"]);

/** Percent-encodes every string inside a request body (nested lists and objects too). */
export function encodeRequest(value: unknown, key = ""): unknown {
	if (typeof value === "string") return PLAIN.has(key.toLowerCase()) ? value : encodeURIComponent(value);
	if (Array.isArray(value)) return value.map((item) => encodeRequest(item, key));
	if (value !== null && typeof value === "object") {
		const out: Record<string, unknown> = {};
		for (const [k, v] of Object.entries(value)) if (v !== undefined) out[k] = encodeRequest(v, k);
		return out;
	}
	return value;
}

/** Decodes form-URL-encoded text (`+` is a space); a malformed escape is kept as it is. */
export function formDecode(text: string): string {
	const spaced = text.replace(/\+/g, " ");
	try {
		return decodeURIComponent(spaced);
	} catch {
		return spaced;
	}
}

/** Decodes the encoded fields of an answer: campaign texts, share messages and the terms. */
export function decodeAnswer(operation: string, body: Record<string, unknown>): Record<string, unknown> {
	if (operation === "campaignterms" && typeof body.message === "string") return { ...body, message: formDecode(body.message) };
	if (operation !== "getcampaigndata") return body;
	const out: Record<string, unknown> = { ...body };
	for (const field of ["offertitle", "offerdescription"]) {
		const value = out[field];
		if (typeof value === "string") out[field] = formDecode(value);
	}
	if (Array.isArray(out.socialactions)) {
		out.socialactions = out.socialactions.map((action: Record<string, unknown>) =>
			typeof action?.sharemessage === "string" ? { ...action, sharemessage: formDecode(action.sharemessage) } : action,
		);
	}
	return out;
}
