import { afterAll } from "vitest";
import { stopAllServices } from "../../scripts/dev-service.mjs";

// After each file's own hooks (vitest runs after-hooks last registered first): stop any `wrangler dev` the
// file started and did not stop, such as one whose start outlived a `beforeAll` timeout on a loaded machine,
// so it cannot keep its process group running (and loading the machine) through the following files.
afterAll(stopAllServices, 240_000);
