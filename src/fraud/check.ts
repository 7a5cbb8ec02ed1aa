import { isDisposableDomain } from "./disposable";
import {
	type FraudReview,
	fraudSignals,
	NO_FACTS,
	type PersonFields,
	reviewSignals,
	type SignalFacts,
	type SignalSettings,
} from "./signals";

/**
 * The fraud review of one reward-producing event: which signals fire for the
 * friend and its referrer, and whether the campaign's settings make them
 * Suspicious or flag-only. Without `facts` (shared devices and networks,
 * recent sign-ups, read from D1) only the profile signals can fire.
 */
export function checkSignals(
	friend: PersonFields,
	referrer: PersonFields,
	settings: SignalSettings,
	facts: SignalFacts = NO_FACTS,
): FraudReview {
	return reviewSignals(fraudSignals(friend, referrer, facts, settings, isDisposableDomain), settings);
}
