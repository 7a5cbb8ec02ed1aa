/**
 * Which webhook URLs an app may register (admin create and PATCH) and the
 * consumer may call: the service must not be turned into a proxy towards
 * private networks, cloud metadata endpoints or itself (SSRF).
 *
 * Allowed: `https` URLs to a public host name or public IP address. With
 * `allowLoopback` (the var ALLOW_LOOPBACK_WEBHOOKS, for development and
 * tests only), also `http`/`https` to loopback (127.0.0.0/8, ::1, localhost),
 * except the service's own host and port.
 *
 * Host names are not resolved here (Workers cannot resolve DNS); Cloudflare's
 * fetch does not reach private addresses of its network from a Worker in any
 * case. The checks catch what a URL says literally, in every spelling the URL
 * parser accepts (`http://2130706433/` is 127.0.0.1, `[::ffff:a9fe:a9fe]` is
 * 169.254.169.254).
 */

export interface WebhookUrlPolicy {
	allowLoopback: boolean;
	/** Hosts (`host:port` as URL.host gives them) of the service itself. */
	ownHosts: string[];
}

/** Host names that stand for private or metadata endpoints whatever DNS says. */
const BLOCKED_NAMES = [/^metadata\.google\.internal$/, /^metadata$/, /\.internal$/, /\.local$/];
const LOOPBACK_NAMES = [/^localhost$/, /\.localhost$/];

/** Why `raw` may not be a webhook URL, or null when it may. */
export function webhookUrlProblem(raw: string, policy: WebhookUrlPolicy): string | null {
	let url: URL;
	try {
		url = new URL(raw);
	} catch {
		return "must be a URL";
	}
	if (url.protocol !== "https:" && url.protocol !== "http:") return "must be an https URL";
	if (url.username !== "" || url.password !== "") return "must not contain a user name or password";
	const host = url.hostname.toLowerCase().replace(/\.$/, "");
	if (policy.ownHosts.some((own) => own.toLowerCase() === url.host.toLowerCase())) return "must not point at this service";
	const kind = hostKind(host);
	if (kind === "loopback") {
		if (!policy.allowLoopback) return "must not point at a loopback address";
		return null;
	}
	if (url.protocol !== "https:") return "must be an https URL";
	if (kind === "private") return "must not point at a private, link-local or metadata address";
	return null;
}

type HostKind = "public" | "loopback" | "private";

function hostKind(host: string): HostKind {
	if (LOOPBACK_NAMES.some((re) => re.test(host))) return "loopback";
	if (BLOCKED_NAMES.some((re) => re.test(host))) return "private";
	if (host.startsWith("[")) return ipv6Kind(host.slice(1, -1));
	const v4 = parseIpv4(host);
	return v4 === null ? "public" : ipv4Kind(v4);
}

/** The WHATWG parser has already turned every IPv4 spelling into dotted decimal. */
function parseIpv4(host: string): number[] | null {
	const parts = host.split(".");
	if (parts.length !== 4 || !parts.every((p) => /^\d{1,3}$/.test(p))) return null;
	const bytes = parts.map(Number);
	return bytes.every((b) => b <= 255) ? bytes : null;
}

function ipv4Kind([a = 0, b = 0, c = 0]: number[]): HostKind {
	if (a === 127) return "loopback";
	if (a === 0 || a === 10 || a >= 224) return "private"; // this network, private, multicast, reserved, broadcast
	if (a === 169 && b === 254) return "private"; // link-local, cloud metadata (169.254.169.254)
	if (a === 172 && b >= 16 && b <= 31) return "private";
	if (a === 192 && b === 168) return "private";
	if (a === 100 && b >= 64 && b <= 127) return "private"; // carrier-grade NAT; Alibaba's metadata 100.100.100.200
	if (a === 192 && b === 0 && (c === 0 || c === 2)) return "private"; // IETF protocol assignments, TEST-NET-1
	if (a === 198 && (b === 18 || b === 19)) return "private"; // benchmarking
	return "public";
}

function ipv6Kind(address: string): HostKind {
	const groups = expandIpv6(address);
	if (!groups) return "private";
	if (groups.every((g) => g === 0)) return "private"; // ::
	if (groups.slice(0, 7).every((g) => g === 0) && groups[7] === 1) return "loopback"; // ::1
	// IPv4-mapped (::ffff:a.b.c.d) and IPv4-compatible (::a.b.c.d): judge the IPv4 address.
	if (groups.slice(0, 5).every((g) => g === 0) && (groups[5] === 0xffff || groups[5] === 0)) {
		return ipv4Kind([groups[6]! >> 8, groups[6]! & 0xff, groups[7]! >> 8, groups[7]! & 0xff]);
	}
	const first = groups[0]!;
	if ((first & 0xfe00) === 0xfc00) return "private"; // unique local fc00::/7 (AWS metadata fd00:ec2::254)
	if ((first & 0xffc0) === 0xfe80) return "private"; // link-local fe80::/10
	if ((first & 0xff00) === 0xff00) return "private"; // multicast
	if (first === 0x64 && groups[1] === 0xff9b) return "private"; // NAT64 of any IPv4, private ones included
	return "public";
}

/** The 8 groups of an IPv6 address as the URL parser prints it (compressed, lower case, no IPv4 tail). */
function expandIpv6(address: string): number[] | null {
	const [head = "", tail] = address.split("::");
	const left = head ? head.split(":") : [];
	const right = tail ? tail.split(":") : [];
	const missing = 8 - left.length - right.length;
	if (tail === undefined ? left.length !== 8 : missing < 1) return null;
	const groups = [...left, ...Array<string>(tail === undefined ? 0 : missing).fill("0"), ...right].map((g) => Number.parseInt(g, 16));
	return groups.length === 8 && groups.every((g) => Number.isInteger(g) && g >= 0 && g <= 0xffff) ? groups : null;
}

/** The policy from the environment: loopback only with ALLOW_LOOPBACK_WEBHOOKS, never the service's own hosts. */
export function webhookUrlPolicy(
	env: { ALLOW_LOOPBACK_WEBHOOKS?: string; SHARE_BASE_URL?: string; PUBLIC_ORIGIN?: string },
	requestUrl?: string,
): WebhookUrlPolicy {
	const ownHosts: string[] = [];
	for (const origin of [requestUrl, env.SHARE_BASE_URL, env.PUBLIC_ORIGIN]) {
		if (!origin) continue;
		try {
			ownHosts.push(new URL(origin).host);
		} catch {}
	}
	return { allowLoopback: ["1", "true", "yes"].includes(String(env.ALLOW_LOOPBACK_WEBHOOKS ?? "").toLowerCase()), ownHosts };
}
