/**
 * IP addresses as the fraud checks see them. An address is validated and
 * reduced to the network it identifies: an IPv4 address as it is, an IPv6
 * address to its /64 prefix (a home or phone network hands its devices
 * addresses inside one /64 and rotates the rest), an IPv4-mapped IPv6
 * address (`::ffff:1.2.3.4`) to its IPv4 address. Only an HMAC of that
 * network is ever stored (see ipHash), never the address.
 */

const IPV4 = /^(25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)(\.(25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)){3}$/;

/** The eight 16-bit groups of an IPv6 address, or null when it is not one. */
function ipv6Groups(text: string): number[] | null {
	let body = text;
	const lastColon = body.lastIndexOf(":");
	// An embedded IPv4 address in the last 32 bits (::ffff:1.2.3.4) becomes two hex groups.
	if (lastColon >= 0 && body.slice(lastColon + 1).includes(".")) {
		const v4 = body.slice(lastColon + 1);
		if (!IPV4.test(v4)) return null;
		const [a = 0, b = 0, c = 0, d = 0] = v4.split(".").map(Number);
		body = `${body.slice(0, lastColon + 1)}${((a << 8) | b).toString(16)}:${((c << 8) | d).toString(16)}`;
	}
	const halves = body.split("::");
	if (halves.length > 2) return null;
	const parse = (part: string) => (part === "" ? [] : part.split(":"));
	const head = parse(halves[0] ?? "");
	const rest = halves.length === 2 ? parse(halves[1] ?? "") : [];
	if (![...head, ...rest].every((g) => /^[0-9a-fA-F]{1,4}$/.test(g))) return null;
	const explicit = head.length + rest.length;
	if (halves.length === 1 ? explicit !== 8 : explicit > 7) return null;
	const values = (list: string[]) => list.map((g) => Number.parseInt(g, 16));
	return [...values(head), ...Array<number>(8 - explicit).fill(0), ...values(rest)];
}

/** The network an address identifies (see the module comment), or null when `text` is not an IPv4 or IPv6 address. */
export function ipNetwork(text: string): string | null {
	const value = text.trim();
	if (IPV4.test(value)) return value;
	if (!value.includes(":") || value.length > 45) return null;
	const groups = ipv6Groups(value.replace(/%.*$/, ""));
	if (!groups) return null;
	const mapped = groups.slice(0, 5).every((g) => g === 0) && groups[5] === 0xffff;
	if (mapped) return [groups[6] ?? 0, groups[7] ?? 0].flatMap((g) => [g >> 8, g & 0xff]).join(".");
	return `${groups
		.slice(0, 4)
		.map((g) => g.toString(16))
		.join(":")}::/64`;
}

const encoder = new TextEncoder();
const keys = new Map<string, Promise<CryptoKey>>();

/**
 * The keyed hash stored for an IP address: hex HMAC-SHA256 of its network
 * under the Worker secret IP_HASH_KEY. Equal networks give equal hashes, so
 * they can be compared, but the address cannot be recovered (nor guessed by
 * hashing all 2^32 IPv4 addresses) without the key.
 */
export async function ipHash(secret: string, network: string): Promise<string> {
	if (!secret) throw new Error("IP_HASH_KEY is not set: IP addresses cannot be stored");
	let key = keys.get(secret);
	if (!key) {
		key = crypto.subtle.importKey("raw", encoder.encode(secret), { name: "HMAC", hash: "SHA-256" }, false, ["sign"]);
		keys.set(secret, key);
	}
	const mac = await crypto.subtle.sign("HMAC", await key, encoder.encode(`ip:${network}`));
	return [...new Uint8Array(mac)].map((b) => b.toString(16).padStart(2, "0")).join("");
}
