// As text (wrangler.toml [[rules]] Text): a string costs nothing at isolate start; it is parsed on first use.

import wildcards from "disposable-email-domains/wildcard.json";
import { z } from "zod";
import domainsJson from "../../node_modules/disposable-email-domains/index.json";

/**
 * Disposable email domains, from the `disposable-email-domains` npm package
 * (updated by updating the package). The list is bundled as text (~700 KB
 * gzipped) and parsed into Sets once per isolate, on first use, so neither
 * the isolate's start nor a request that never checks an email pays for it.
 */
let exact: Set<string> | null = null;
let wildcard: Set<string> | null = null;

/** The list as bundled: text under wrangler (its Text rule), already an array where the bundler parses JSON itself (vitest's Vite). */
function parseList(bundled: unknown): string[] {
	return z.array(z.string()).parse(typeof bundled === "string" ? JSON.parse(bundled) : bundled);
}

/** True when `domain` is a listed disposable domain, or a subdomain of a domain listed as a wildcard. */
export function isDisposableDomain(domain: string): boolean {
	exact ??= new Set(parseList(domainsJson));
	wildcard ??= new Set(wildcards);
	const name = domain.trim().toLowerCase().replace(/\.$/, "");
	if (exact.has(name)) return true;
	const labels = name.split(".");
	for (let i = 1; i < labels.length - 1; i++) if (wildcard.has(labels.slice(i).join("."))) return true;
	return false;
}
