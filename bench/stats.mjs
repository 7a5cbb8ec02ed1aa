// Small statistics the bench's modules share.

/** The lower median of `xs` (of an even count, the smaller middle value: a value measured, not a mean); null when empty. */
export const median = (xs) => {
	const s = [...xs].sort((a, b) => a - b);
	return s.length ? s[Math.floor((s.length - 1) / 2)] : null;
};
