const encoder = new TextEncoder();

/** Hex SHA-256 of `text`: how private keys are stored. */
export async function sha256Hex(text: string): Promise<string> {
	const digest = await crypto.subtle.digest("SHA-256", encoder.encode(text));
	return [...new Uint8Array(digest)].map((b) => b.toString(16).padStart(2, "0")).join("");
}

/**
 * Compares two strings in time that does not depend on where they differ,
 * so a caller cannot learn a secret byte by byte from response times.
 */
export function constantTimeEqual(a: string, b: string): boolean {
	const left = encoder.encode(a);
	const right = encoder.encode(b);
	if (left.byteLength !== right.byteLength) {
		// Still spend the comparison so length alone is all that leaks.
		crypto.subtle.timingSafeEqual(left, left);
		return false;
	}
	return crypto.subtle.timingSafeEqual(left, right);
}
