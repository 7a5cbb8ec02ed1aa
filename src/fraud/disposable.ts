import domains from "disposable-email-domains/index.json";
import wildcards from "disposable-email-domains/wildcard.json";

/**
 * Disposable email domains, from the `disposable-email-domains` npm package
 * (updated by updating the package). The list is bundled (~700 KB gzipped);
 * the Sets are built once per isolate, on
 * first use, so a request that never checks an email does not pay for them.
 */
let exact: Set<string> | null = null;
let wildcard: Set<string> | null = null;

/** True when `domain` is a listed disposable domain, or a subdomain of a domain listed as a wildcard. */
export function isDisposableDomain(domain: string): boolean {
	exact ??= new Set(domains);
	wildcard ??= new Set(wildcards);
	const name = domain.trim().toLowerCase().replace(/\.$/, "");
	if (exact.has(name)) return true;
	const labels = name.split(".");
	for (let i = 1; i < labels.length - 1; i++) if (wildcard.has(labels.slice(i).join("."))) return true;
	return false;
}
