/** The date formats of the public API (decisions.md §1), all in UTC. */

const MONTHS = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"] as const;
const pad = (n: number) => String(n).padStart(2, "0");

/** `2-Mar-2017`: `rewardedon`, `regdate`. */
export function formatDayMonthYear(iso: string): string {
	const d = new Date(iso);
	return `${d.getUTCDate()}-${MONTHS[d.getUTCMonth()]}-${d.getUTCFullYear()}`;
}

/** `Nov 21, 2026 10:05 PM`: `campaignstartdate`. */
export function formatCampaignStart(iso: string): string {
	const d = new Date(iso);
	const hours = d.getUTCHours();
	const h12 = hours % 12 === 0 ? 12 : hours % 12;
	return `${MONTHS[d.getUTCMonth()]} ${d.getUTCDate()}, ${d.getUTCFullYear()} ${h12}:${pad(d.getUTCMinutes())} ${hours < 12 ? "AM" : "PM"}`;
}

/** `2026-11-21 22:05:00`: `lastmodifieddate`. */
export function formatTimestamp(iso: string): string {
	const d = new Date(iso);
	return `${d.getUTCFullYear()}-${pad(d.getUTCMonth() + 1)}-${pad(d.getUTCDate())} ${pad(d.getUTCHours())}:${pad(d.getUTCMinutes())}:${pad(d.getUTCSeconds())}`;
}

/** Now as an ISO-8601 UTC string, the form stored everywhere. */
export const nowIso = () => new Date().toISOString();
