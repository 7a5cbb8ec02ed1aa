/** Pure shaping of the daily counters into the stats answer (see src/db/stats.ts). */

export interface Cell {
	day: string;
	/** Absent in cells summed over campaigns. */
	campaignid?: number;
	metric: string;
	unit: string;
	value: number;
}

export interface DayStats {
	day: string;
	/** Unique share-link clicks: people, once per client and 30 minutes (docs/fraud.md). */
	clicks: number;
	signups: number;
	referredsignups: number;
	conversions: number;
	rewardscreated: number;
	/** Reward amount earned, per unit: rejected rewards and refunded amounts are not counted (db/stats.ts). */
	rewardamount: Record<string, number>;
	/** Amount redeemed, per unit. */
	redeemed: Record<string, number>;
}

const emptyDay = (day: string): DayStats => ({
	day,
	clicks: 0,
	signups: 0,
	referredsignups: 0,
	conversions: 0,
	rewardscreated: 0,
	rewardamount: {},
	redeemed: {},
});

const round2 = (n: number) => Math.round(n * 100) / 100;

/** Every UTC day from `from` to `to` inclusive (YYYY-MM-DD). */
export function daysBetween(from: string, to: string): string[] {
	const days: string[] = [];
	for (let t = Date.parse(`${from}T00:00:00Z`); t <= Date.parse(`${to}T00:00:00Z`); t += 86_400_000) {
		days.push(new Date(t).toISOString().slice(0, 10));
	}
	return days;
}

function add(into: DayStats, cell: Cell): void {
	switch (cell.metric) {
		case "clicks":
			into.clicks += cell.value;
			break;
		case "signups":
			into.signups += cell.value;
			break;
		case "referred_signups":
			into.referredsignups += cell.value;
			break;
		case "conversions":
			into.conversions += cell.value;
			break;
		case "rewards_created":
			into.rewardscreated += cell.value;
			break;
		case "reward_amount":
			into.rewardamount[cell.unit] = round2((into.rewardamount[cell.unit] ?? 0) + cell.value);
			break;
		case "redeemed":
			into.redeemed[cell.unit] = round2((into.redeemed[cell.unit] ?? 0) + cell.value);
			break;
	}
}

/**
 * A funnel step's rate: the share of the step's base that made it, never
 * above 1 (docs/dashboard's Analytics, README). The base is the previous
 * step or this one, whichever is larger: a friend may sign up with a code
 * typed in, without a click, and convert in the range after signing up
 * before it, so a step can count people its previous step never saw. Null
 * when both are empty.
 */
const rate = (part: number, whole: number) => {
	const base = Math.max(part, whole);
	return base > 0 ? Math.round((part / base) * 1000) / 1000 : null;
};

/** Clicks → referred sign-ups → conversions, with the rate of each step. */
export function funnelOf(d: Pick<DayStats, "clicks" | "referredsignups" | "conversions">) {
	return {
		clicks: d.clicks,
		signups: d.referredsignups,
		conversions: d.conversions,
		signuprate: rate(d.referredsignups, d.clicks),
		conversionrate: rate(d.conversions, d.referredsignups),
		clickconversionrate: rate(d.conversions, d.clicks),
	};
}

/**
 * One row per day of the range (zeros where nothing happened), the totals,
 * the referred share of signups (null without signups), and the raw
 * share-link requests (bots, HEADs and repeats included) apart from the
 * unique `clicks`, shaped as a user's clicks are: `{total, days}`.
 */
export function shapeStats(cells: Cell[], from: string, to: string) {
	const range = daysBetween(from, to);
	const byDay = new Map(range.map((day) => [day, emptyDay(day)]));
	const requests = new Map(range.map((day) => [day, 0]));
	const totals = emptyDay("total");
	const perCampaign = new Map<number, DayStats>();
	const units = new Set<string>();
	for (const cell of cells) {
		if (cell.metric === "reward_amount" || cell.metric === "redeemed") units.add(cell.unit);
		if (cell.campaignid !== undefined && byDay.has(cell.day)) {
			const campaign = perCampaign.get(cell.campaignid) ?? emptyDay("total");
			perCampaign.set(cell.campaignid, campaign);
			add(campaign, cell);
		}
		const day = byDay.get(cell.day);
		if (!day) continue;
		if (cell.metric === "requests") requests.set(cell.day, (requests.get(cell.day) ?? 0) + cell.value);
		add(day, cell);
		add(totals, cell);
	}
	const { day: _, ...totalNumbers } = totals;
	const requestDays = [...requests].map(([day, count]) => ({ day, requests: count }));
	return {
		days: [...byDay.values()],
		totals: totalNumbers,
		referredshare: totals.signups > 0 ? round2(totals.referredsignups / totals.signups) : null,
		requests: { total: requestDays.reduce((sum, d) => sum + d.requests, 0), days: requestDays },
		/** Every unit with an amount in the range, sorted: one column each in tables and the CSV. */
		units: [...units].sort(),
		funnel: funnelOf(totals),
		campaigns: [...perCampaign]
			.sort(([a], [b]) => a - b)
			.map(([campaignid, c]) => ({ campaignid, ...funnelOf(c), rewardamount: c.rewardamount })),
	};
}
