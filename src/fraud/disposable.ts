// As text (wrangler.toml [[rules]] Text): a string costs nothing at isolate start; it is parsed on first use.

import wildcards from "disposable-email-domains/wildcard.json";
import domainsJson from "../../node_modules/disposable-email-domains/index.json";

/**
 * Disposable email domains, from the `disposable-email-domains` npm package
 * (updated by updating the package). The list is bundled as text (~700 KB
 * gzipped) and parsed once per isolate, on first use, so neither the
 * isolate's start nor a request that never checks an email pays for it.
 */
let exact: ((name: string) => boolean) | null = null;
let wildcard: Set<string> | null = null;

/**
 * A lookup of exact names in `list` (the package's 121,570 domains). The
 * package ships them sorted, unique and in lower case, so the lookup is a
 * binary search over the parsed array itself: building a Set of them, and
 * checking the array with zod, cost an isolate's first conversion about
 * twice its JSON.parse (bench/README.md, issue 33's CPU). A list that is
 * not strictly sorted (a future version of the package) gets a Set, so the
 * answer never depends on the order; one that is not an array of strings
 * fails loudly, as the zod check did.
 */
export function domainLookup(list: unknown): (name: string) => boolean {
	if (!Array.isArray(list)) throw new TypeError("disposable-email-domains: the list is not an array");
	let sorted = true;
	for (let i = 0; i < list.length; i++) {
		const name: unknown = list[i];
		if (typeof name !== "string") throw new TypeError(`disposable-email-domains: entry ${i} is not a string`);
		if (i > 0 && !(list[i - 1] < name)) sorted = false;
	}
	const names: string[] = list;
	if (!sorted) {
		const set = new Set(names);
		return (name) => set.has(name);
	}
	return (name) => {
		let lo = 0;
		let hi = names.length - 1;
		while (lo <= hi) {
			const mid = (lo + hi) >>> 1;
			const at = names[mid] ?? "";
			if (at === name) return true;
			if (at < name) lo = mid + 1;
			else hi = mid - 1;
		}
		return false;
	};
}

/** The list as bundled: text under wrangler (its Text rule), already an array where the bundler parses JSON itself (vitest's Vite). */
function parseList(bundled: unknown): unknown {
	return typeof bundled === "string" ? JSON.parse(bundled) : bundled;
}

/** True when `domain` is a listed disposable domain, or a subdomain of a domain listed as a wildcard. */
export function isDisposableDomain(domain: string): boolean {
	exact ??= domainLookup(parseList(domainsJson));
	wildcard ??= new Set(wildcards);
	const name = domain.trim().toLowerCase().replace(/\.$/, "");
	if (exact(name)) return true;
	const labels = name.split(".");
	for (let i = 1; i < labels.length - 1; i++) if (wildcard.has(labels.slice(i).join("."))) return true;
	return false;
}
