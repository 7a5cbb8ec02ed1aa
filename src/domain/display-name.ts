/**
 * The name a referrer is shown under on a public board (getleaderboard, the
 * dashboard's leaderboard; docs/rewards.md, "Leaderboards"). Derived, never
 * copied (issue 47: a name `john.doe@corp.com` was published as that address,
 * a 200-character name whole, a right-to-left override kept, and
 * `John Doe <john.doe@corp.com>` became `John <.`):
 *
 * - an `@` and the words at either side of it (also spaced out:
 *   `john.doe @ corp.com`), and a word holding a link's `://` or `www.`, are
 *   dropped whole: anything that looks like an email is never shown, nor any
 *   part of it;
 * - control, format (bidi overrides and isolates, zero-width characters),
 *   private-use and unassigned code points are removed;
 * - a word counts only when it holds a letter, with the punctuation around it
 *   trimmed (`<`, `"`, `(`): an initial is always a letter;
 * - the first name is cut to FIRST_NAME_MAX code points, so no name is longer
 *   than 23;
 * - the campaign's style (`leaderboardnames`) picks the shape: "First L."
 *   (`firstinitial`, the default), initials "J. D." (`initials`), or
 *   "Referrer #n" by rank (`numbered`); a name with no usable word is
 *   "A referrer".
 */

export const LEADERBOARD_NAME_STYLES = ["firstinitial", "initials", "numbered"] as const;
export type LeaderboardNameStyle = (typeof LEADERBOARD_NAME_STYLES)[number];
export const DEFAULT_NAME_STYLE: LeaderboardNameStyle = "firstinitial";

/** Longest first name shown, in code points ("First L." is then at most 23). */
export const FIRST_NAME_MAX = 20;
/** A name longer than this is not read further (a bound on the work, whatever the stored name's size). */
const READ_MAX = 1000;

// Whitespace first becomes a space (a line break separates words); then what is never shown goes (a lone surrogate too).
const SPACES = /[\s\p{Z}]+/gu;
const HIDDEN = /[\p{Cc}\p{Cf}\p{Cs}\p{Co}\p{Cn}]/gu;
const EDGE_PUNCTUATION = /^[^\p{L}\p{N}]+|[^\p{L}\p{N}\p{M}]+$/gu;
const LETTER = /\p{L}/u;
/** An email (an at sign, also the full-width one) or a link: never shown, nor any part of it. */
const LINK_LIKE = /[@＠]|:\/\/|^www\./iu;
/** An at sign with the words at either side, also spaced out (`john.doe @ corp.com`): the whole address goes. */
const SPACED_EMAIL = /\S*\s*[@＠]\s*\S*/gu;

/** The words of a name that may be shown: no email-like word, no hidden characters, each holding a letter. */
export function nameWords(name: string | null): string[] {
	const text = (name ?? "").slice(0, READ_MAX).replace(SPACES, " ").replace(HIDDEN, "").replace(SPACED_EMAIL, " ");
	return text
		.split(" ")
		.filter((word) => !LINK_LIKE.test(word))
		.map((word) => word.replace(EDGE_PUNCTUATION, ""))
		.filter((word) => LETTER.test(word));
}

/** The first letter of a word, upper-cased (a whole code point, never half a surrogate pair). */
function initialOf(word: string): string {
	const letter = Array.from(word).find((ch) => LETTER.test(ch)) ?? "";
	return letter.toUpperCase();
}

/** The public name of the referrer ranked `rank` with the stored `name`, in `style`. */
export function displayName(name: string | null, style: LeaderboardNameStyle = DEFAULT_NAME_STYLE, rank?: number): string {
	if (style === "numbered") return rank === undefined ? "A referrer" : `Referrer #${rank}`;
	const words = nameWords(name);
	const first = words[0];
	if (first === undefined) return "A referrer";
	const last = words.length > 1 ? words[words.length - 1] : undefined;
	if (style === "initials") return last ? `${initialOf(first)}. ${initialOf(last)}.` : `${initialOf(first)}.`;
	const shown = Array.from(first).slice(0, FIRST_NAME_MAX).join("");
	return last ? `${shown} ${initialOf(last)}.` : shown;
}
