/**
 * Products and categories (issue 34; docs/rewards.md, "Products and
 * categories"): what a rule's `categories` and `inclusionsandexclusions`
 * mean. The contract carries both fields without saying what they do
 * (api-spec.md, "Reward rule": "not shown"); this module gives them one.
 * Pure, so the rules engine and its tests share it.
 */

/** What an event says about what was bought (registerconversionevent's optional `productid` and `category`). */
export interface ProductFacts {
	productid: string | null;
	category: string | null;
}

/** One entry of `inclusionsandexclusions` as the admin API stores it. */
export interface ProductRule {
	type: "include" | "exclude";
	productid: string;
}

/** A rule's product restriction, read once: every name trimmed and lower-cased, since matching ignores case. */
export interface ProductRestriction {
	categories: Set<string>;
	included: Set<string>;
	excluded: Set<string>;
}

const key = (value: string) => value.trim().toLowerCase();

function isProductRule(entry: unknown): entry is ProductRule {
	if (typeof entry !== "object" || entry === null) return false;
	const { type, productid } = entry as Record<string, unknown>;
	return (type === "include" || type === "exclude") && typeof productid === "string" && productid.trim() !== "";
}

/**
 * The restriction of a rule's two stored fields. Values of another shape,
 * stored before these fields had a meaning (any JSON was accepted then),
 * restrict nothing, so such rules keep firing exactly as before.
 */
export function productRestriction(categories: unknown, inclusionsandexclusions: unknown): ProductRestriction {
	const restriction: ProductRestriction = { categories: new Set(), included: new Set(), excluded: new Set() };
	if (Array.isArray(categories)) {
		for (const name of categories) if (typeof name === "string" && name.trim() !== "") restriction.categories.add(key(name));
	}
	if (Array.isArray(inclusionsandexclusions)) {
		for (const entry of inclusionsandexclusions) {
			if (!isProductRule(entry)) continue;
			(entry.type === "include" ? restriction.included : restriction.excluded).add(key(entry.productid));
		}
	}
	return restriction;
}

/** True when the rule restricts nothing: it fires for every product, and for events that name none. */
export const unrestricted = (r: ProductRestriction) => r.categories.size === 0 && r.included.size === 0 && r.excluded.size === 0;

/**
 * Whether an event's product passes a rule's restriction:
 * - a rule restricting nothing fires for every event (as before this rule);
 * - an event naming neither a product nor a category fires only such rules;
 * - an excluded product never fires, even when its category is listed;
 * - otherwise, when the rule lists categories or included products, the
 *   event's category must be listed or its product included (either
 *   suffices); a rule with exclusions only fires for every other product.
 * Names compare ignoring case and surrounding spaces.
 */
export function productMatches(restriction: ProductRestriction, event: ProductFacts): boolean {
	if (unrestricted(restriction)) return true;
	const productid = event.productid === null ? null : key(event.productid);
	const category = event.category === null ? null : key(event.category);
	if (!productid && !category) return false;
	if (productid && restriction.excluded.has(productid)) return false;
	if (restriction.categories.size === 0 && restriction.included.size === 0) return true;
	return (category !== null && restriction.categories.has(category)) || (productid !== null && restriction.included.has(productid));
}
