/**
 * The fraud signals checked on every reward-producing event (docs/fraud.md).
 * Pure: the facts that need storage (shared devices and networks, recent
 * sign-ups) are read by src/db/identifiers.ts and passed in.
 */

/** Every signal code, in the order they are reported. */
export const FRAUD_SIGNALS = [
	"email_alias",
	"same_phone",
	"same_payment_customer",
	"same_device",
	"same_ip",
	"disposable_email",
	"velocity",
] as const;
export type FraudSignal = (typeof FRAUD_SIGNALS)[number];

/** What each code means, in words, for the reward's `comment`. */
export const SIGNAL_WORDS: Record<FraudSignal, string> = {
	email_alias: "friend and referrer share one mailbox",
	same_phone: "friend and referrer share a phone number",
	same_payment_customer: "friend and referrer share a payment customer",
	same_device: "friend and referrer were seen on the same device",
	same_ip: "friend and referrer were seen on the same network",
	disposable_email: "the friend's email is at a disposable domain",
	velocity: "the referrer had unusually many sign-ups within an hour",
};

/** Default of a campaign's `velocitythreshold`: more referred sign-ups than this in one hour fire `velocity`. */
export const DEFAULT_VELOCITY_THRESHOLD = 20;

/** The parts of a user the profile checks read. */
export interface PersonFields {
	email: string | null;
	phone: string | null;
	paymentcustomerid: string | null;
}

/** Facts read from storage for one friend and its referrer. */
export interface SignalFacts {
	/** A device id reported for the friend was also reported for the referrer. */
	sharedDevice: boolean;
	/** An IP network hash reported for the friend was also reported for the referrer. */
	sharedNetwork: boolean;
	/** The referrer's friends attributed in the hour up to the friend's attribution, the friend included. */
	recentReferrals: number;
}

export const NO_FACTS: SignalFacts = { sharedDevice: false, sharedNetwork: false, recentReferrals: 0 };

/** The campaign settings the signals obey. */
export interface SignalSettings {
	/** Codes that make a reward Suspicious; null means all. The others only flag it. */
	suspicioussignals: readonly FraudSignal[] | null;
	/** 0 disables `velocity`. */
	velocitythreshold: number;
}

export const DEFAULT_SIGNAL_SETTINGS: SignalSettings = { suspicioussignals: null, velocitythreshold: DEFAULT_VELOCITY_THRESHOLD };

/** An email reduced to its mailbox: case, `+tags` and, for Gmail, dots removed. */
export function canonicalEmail(email: string): string {
	const [local = "", domain = ""] = email.toLowerCase().split("@");
	const base = local.split("+")[0] ?? "";
	const gmail = domain === "gmail.com" || domain === "googlemail.com";
	return `${gmail ? base.replace(/\./g, "") : base}@${gmail ? "gmail.com" : domain}`;
}

/** The domain part of an email, lower-cased ("" when there is none). */
export const emailDomain = (email: string) => email.slice(email.lastIndexOf("@") + 1).toLowerCase();

/**
 * The signals that fire for a friend and its referrer, in FRAUD_SIGNALS
 * order. `isDisposable` answers for the friend's email domain.
 */
export function fraudSignals(
	friend: PersonFields,
	referrer: PersonFields,
	facts: SignalFacts,
	settings: Pick<SignalSettings, "velocitythreshold">,
	isDisposable: (domain: string) => boolean,
): FraudSignal[] {
	const fired = new Set<FraudSignal>();
	if (friend.email && referrer.email && canonicalEmail(friend.email) === canonicalEmail(referrer.email)) fired.add("email_alias");
	if (friend.phone && friend.phone === referrer.phone) fired.add("same_phone");
	if (friend.paymentcustomerid && friend.paymentcustomerid === referrer.paymentcustomerid) fired.add("same_payment_customer");
	if (facts.sharedDevice) fired.add("same_device");
	if (facts.sharedNetwork) fired.add("same_ip");
	if (friend.email?.includes("@") && isDisposable(emailDomain(friend.email))) fired.add("disposable_email");
	if (settings.velocitythreshold > 0 && facts.recentReferrals > settings.velocitythreshold) fired.add("velocity");
	return FRAUD_SIGNALS.filter((code) => fired.has(code));
}

/** What the signals of one event decide about its rewards. */
export interface FraudReview {
	/** Every signal that fired (recorded on the reward as `fraudsignals`). */
	signals: FraudSignal[];
	/** True when one of them makes the reward Suspicious under the campaign's settings. */
	suspicious: boolean;
	/** Names the signals in words; null when none fired. */
	comment: string | null;
}

export const NO_SIGNALS: FraudReview = { signals: [], suspicious: false, comment: null };

/** Sorts fired signals into Suspicious and flag-only by the campaign's `suspicioussignals`. */
export function reviewSignals(signals: FraudSignal[], settings: Pick<SignalSettings, "suspicioussignals">): FraudReview {
	if (signals.length === 0) return NO_SIGNALS;
	const makesSuspicious = (code: FraudSignal) => settings.suspicioussignals === null || settings.suspicioussignals.includes(code);
	const suspicious = signals.some(makesSuspicious);
	const words = signals.map((code) => `${SIGNAL_WORDS[code]} (${code})`).join("; ");
	const comment = `${suspicious ? "Suspicious" : "Flagged"}: ${words}.`;
	return { signals, suspicious, comment };
}

/** The comment of a reward: the fraud review's words, then (for a flag-only review) the normal status's comment. */
export function commentWithSignals(statusComment: string | null, review: FraudReview): string | null {
	if (!review.comment) return statusComment;
	if (review.suspicious || !statusComment) return review.comment;
	return `${review.comment} ${statusComment}`;
}
