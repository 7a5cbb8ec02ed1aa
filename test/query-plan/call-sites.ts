/// <reference types="vite/client" />
import type { Engine, Recorded } from "./recorder";

/**
 * Every place the service's code hands SQL to D1 (`.prepare(` in src/db/) or
 * to a ledger's SQLite (`.exec(` in src/ledger/), read from the source, so
 * the query-plan guard can tell which call sites its tour never reached.
 */

// The source text of the two storage layers (Vite's raw import), keyed by path relative to this file.
const D1_SOURCES = import.meta.glob<string>("../../src/db/*.ts", { query: "?raw", import: "default", eager: true });
const LEDGER_SOURCES = import.meta.glob<string>("../../src/ledger/*.ts", { query: "?raw", import: "default", eager: true });

export interface CallSite {
	engine: Engine;
	/** e.g. "src/db/users.ts:148" */
	where: string;
	file: string;
	/** The literal parts of the SQL argument in order (split at `${...}`); null when the argument is not a literal. */
	fragments: string[] | null;
}

const squash = (s: string) => s.replace(/\s+/g, " ").trim();

/** Reads a string or template literal starting at `start`; returns its literal parts, or null when none starts there. */
function literalAt(text: string, start: number): string[] | null {
	const quote = text[start];
	if (quote !== '"' && quote !== "'" && quote !== "`") return null;
	const parts: string[] = [];
	let current = "";
	for (let i = start + 1; i < text.length; i++) {
		const c = text[i];
		if (c === "\\") {
			current += text[i + 1] ?? "";
			i++;
		} else if (c === quote) {
			parts.push(current);
			return parts.map(squash).filter((p) => p !== "");
		} else if (quote === "`" && c === "$" && text[i + 1] === "{") {
			parts.push(current);
			current = "";
			// Skip the interpolation, braces balanced (interpolations here hold no braces in strings).
			let depth = 0;
			for (i = i + 1; i < text.length; i++) {
				if (text[i] === "{") depth++;
				else if (text[i] === "}" && --depth === 0) break;
			}
		} else current += c;
	}
	return null;
}

/** The call sites of `method` in the given sources (path -> text). */
export function scan(sources: Record<string, string>, method: "prepare" | "exec", engine: Engine): CallSite[] {
	const sites: CallSite[] = [];
	for (const [path, text] of Object.entries(sources)) {
		const file = path.replace(/^(\.\.\/)+/, "");
		const re = new RegExp(`\\.${method}\\s*`, "g");
		for (const m of text.matchAll(re)) {
			let i = (m.index ?? 0) + m[0].length;
			// A type argument: `.exec<{ n: number }>(`, nested `<...>` included.
			if (text[i] === "<") {
				let depth = 0;
				for (; i < text.length; i++) {
					if (text[i] === "<") depth++;
					else if (text[i] === ">" && --depth === 0) break;
				}
				i++;
			}
			if (text[i] !== "(") continue;
			i++;
			while (/\s/.test(text[i] ?? "")) i++;
			const line = text.slice(0, m.index).split("\n").length;
			sites.push({ engine, where: `${file}:${line}`, file, fragments: literalAt(text, i) });
		}
	}
	return sites;
}

/** Every D1 and ledger SQL call site of the service. */
export function callSites(): CallSite[] {
	// The event gate's statements run on its own SQLite (recorder.ts: engine "gate").
	return [...scan(D1_SOURCES, "prepare", "d1"), ...scan(LEDGER_SOURCES, "exec", "ledger")].map((site) =>
		site.file === "src/ledger/event-gate.ts" ? { ...site, engine: "gate" as const } : site,
	);
}

/** True when one of `statements`, sent from the site's file, holds the site's literal parts in order. */
export function reached(site: CallSite, statements: Recorded[]): boolean {
	return statements.some((s) => {
		// A D1 call site of src/db/ may send its statement to the control database or to a shard (issue 50).
		const engine = s.engine === "shard" ? "d1" : s.engine;
		if (engine !== site.engine || s.file !== site.file) return false;
		if (site.fragments === null) return true;
		const text = squash(s.sql);
		let from = 0;
		for (const part of site.fragments) {
			const at = text.indexOf(part, from);
			if (at < 0) return false;
			from = at + part.length;
		}
		return true;
	});
}
