/**
 * Typed reads of one statement's result in a D1 batch whose statements select
 * rows of different shapes (`db.batch<Row>()` types every result alike). The
 * caller names the shape the statement's SQL selects, next to that SQL in
 * src/db/; this is the one place a D1 result is asserted to a row type.
 */

/** The rows of one result of a batch. */
export function rowsOf<Row>(result: D1Result | undefined): Row[] {
	return (result?.results ?? []) as Row[];
}

/** The first row of one result of a batch, or undefined when it has none. */
export function firstRowOf<Row>(result: D1Result | undefined): Row | undefined {
	return rowsOf<Row>(result)[0];
}
