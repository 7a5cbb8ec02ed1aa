/**
 * Email header values. Anything that goes into a header (the recipient's
 * display name, the subject) passes through `headerText` when the email is
 * rendered AND again when it is sent, so no value, stored before this rule
 * or after, can end a header line and start another (`Bcc:` injection).
 * `formatMailbox` and `renderHeaders` show how such values are written in a
 * message (RFC 5322 quoting, RFC 2047 encoded-words for non-ASCII text);
 * the tests render a message with them to check its header block.
 */

/** Longest display name or subject kept (a header line should stay under 998 octets). */
export const MAX_HEADER_TEXT = 200;

/**
 * One line of plain text: every line break and other control character
 * (C0, DEL, C1, U+2028/2029) becomes a space, runs of spaces collapse,
 * lone surrogates go, and the result is cut at `max` characters.
 */
export function headerText(value: string | null | undefined, max = MAX_HEADER_TEXT): string {
	if (!value) return "";
	let out = "";
	for (let i = 0; i < value.length; i++) {
		const c = value.charCodeAt(i);
		if (c < 0x20 || (c >= 0x7f && c <= 0x9f) || c === 0x2028 || c === 0x2029) {
			out += " ";
		} else if (c >= 0xd800 && c <= 0xdfff) {
			const pair = c <= 0xdbff && (value.charCodeAt(i + 1) & 0xfc00) === 0xdc00;
			if (pair) {
				out += value.slice(i, i + 2);
				i++;
			}
		} else out += value[i];
	}
	const collapsed = out.replace(/ {2,}/g, " ").trim();
	return [...collapsed].slice(0, max).join("").trim();
}

const NEEDS_ENCODING = /[^\x20-\x7e]/;

/** RFC 2047 encoded-words (UTF-8, base64), each at most 75 characters, for text that is not plain ASCII. */
export function encodeWords(text: string): string {
	if (!NEEDS_ENCODING.test(text)) return text;
	const words: string[] = [];
	let chunk = "";
	const flush = () => {
		if (chunk) words.push(`=?UTF-8?B?${base64(chunk)}?=`);
		chunk = "";
	};
	// 45 UTF-8 bytes become 60 base64 characters: with `=?UTF-8?B?` and `?=`, 72 in all.
	for (const ch of text) {
		if (utf8Length(chunk + ch) > 45) flush();
		chunk += ch;
	}
	flush();
	return words.join(" ");
}

const utf8Length = (text: string) => new TextEncoder().encode(text).byteLength;

function base64(text: string): string {
	let binary = "";
	for (const byte of new TextEncoder().encode(text)) binary += String.fromCharCode(byte);
	return btoa(binary);
}

/** `"Display Name" <addr>` with the name quoted (RFC 5322) or encoded (RFC 2047); just the address when there is no name. */
export function formatMailbox(name: string | null | undefined, address: string): string {
	const clean = headerText(name);
	if (!clean) return `<${address}>`;
	const shown = NEEDS_ENCODING.test(clean) ? encodeWords(clean) : `"${clean.replace(/["\\]/g, (c) => `\\${c}`)}"`;
	return `${shown} <${address}>`;
}

export interface HeaderFields {
	from: string;
	to: string;
	toName?: string | null;
	subject: string;
}

/** The header block of a message with these fields, as `Name: value` lines joined by CRLF. */
export function renderHeaders(fields: HeaderFields): string {
	return [
		`From: <${fields.from}>`,
		`To: ${formatMailbox(fields.toName, fields.to)}`,
		`Subject: ${encodeWords(headerText(fields.subject))}`,
	].join("\r\n");
}
