import { forgetShardDirectory } from "../../src/db/shards";
import { admin } from "../support/api";
import { ok } from "./tour-http";

/**
 * The shard pool's statements (issue 50): the Worker's check of the shard
 * directory (read again here: the isolate may have read it before the
 * recording started) and the superuser's view of every shard and of one,
 * whose statements run on the shards and are explained against the shard
 * schema.
 */
export async function shardsTour(): Promise<void> {
	forgetShardDirectory();
	ok(await admin("GET", "/shards"), "the shard pool");
	ok(await admin("GET", "/shards/1"), "one shard");
}
