import { DEFAULT_NAME_STYLE, displayName, type LeaderboardNameStyle } from "./display-name";
import { localDay, localDayStart } from "./time-zone";

/**
 * Leaderboard periods and names (docs/rewards.md, "Leaderboards"). Pure: the
 * buckets a reward counts in, by its time in the app's time zone, and the
 * public display name of a referrer.
 */

export type LeaderboardPeriod = "all" | "month" | "week";

/** One period bucket: its key in `leaderboard_counts` and its UTC range [from, to) as ISO texts. */
export interface Bucket {
	key: string;
	from: string;
	to: string;
}

const iso = (t: number) => new Date(t).toISOString();
const DAY_MS = 86_400_000;

/** The local calendar month (YYYY-MM) after `month`. */
function nextMonth(month: string): string {
	const [y, m] = month.split("-").map(Number);
	const next = new Date(Date.UTC(y ?? 1970, m ?? 1, 1));
	return next.toISOString().slice(0, 7);
}

/** The Monday (YYYY-MM-DD) of the ISO week holding the local day `day`. */
function mondayOf(day: string): string {
	const t = Date.parse(`${day}T00:00:00Z`);
	const weekday = (new Date(t).getUTCDay() + 6) % 7; // Monday 0 .. Sunday 6
	return iso(t - weekday * DAY_MS).slice(0, 10);
}

/** The bucket of `period` holding the instant `t` (ms) in `zone`. */
export function bucketOf(period: LeaderboardPeriod, zone: string, t: number): Bucket {
	if (period === "all") return { key: "all", from: "", to: "~" };
	const day = localDay(zone, t);
	if (period === "month") {
		const month = day.slice(0, 7);
		return {
			key: `month:${month}`,
			from: iso(localDayStart(zone, `${month}-01`)),
			to: iso(localDayStart(zone, `${nextMonth(month)}-01`)),
		};
	}
	const monday = mondayOf(day);
	const nextMonday = iso(Date.parse(`${monday}T00:00:00Z`) + 7 * DAY_MS).slice(0, 10);
	return { key: `week:${monday}`, from: iso(localDayStart(zone, monday)), to: iso(localDayStart(zone, nextMonday)) };
}

/** Every bucket a reward created at `createdAt` (ISO) counts in. */
export function bucketsOf(zone: string, createdAt: string): Bucket[] {
	const t = Date.parse(createdAt);
	return [bucketOf("all", zone, t), bucketOf("month", zone, t), bucketOf("week", zone, t)];
}

/** One line of a board as the API shows it. */
export interface BoardEntry {
	rank: number;
	userkey: string;
	displayname: string;
	friendsconverted: number;
	earned: number;
}

/** Numbers the rows (already in rank order: friends, then who reached the count first) from 1, named in the campaign's style. */
export function rankBoard(
	rows: { userkey: string; name: string | null; friends: number; earned: number }[],
	style: LeaderboardNameStyle = DEFAULT_NAME_STYLE,
): BoardEntry[] {
	return rows.map((row, i) => ({
		rank: i + 1,
		userkey: row.userkey,
		displayname: displayName(row.name, style, i + 1),
		friendsconverted: row.friends,
		// The counters add reals: round to hundredths, as money is shown (rewards/money.ts).
		earned: Math.round(row.earned * 100) / 100,
	}));
}
