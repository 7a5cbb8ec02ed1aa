import { describe, expect, it } from "vitest";
import { ERROR_CODES } from "../../src/openapi/error-codes";
import { operations } from "../../src/operations";
import { request } from "../support/api";

/**
 * docs/api.md is the contract a clone of this repository carries (issue 35):
 * it must name every operation the router serves, every field of their
 * requests and answers in the served document, and every error code. A new
 * operation, field or code without its words in docs/api.md fails here.
 */
const API_DOC = import.meta.glob<string>("../../docs/api.md", { query: "?raw", import: "default", eager: true })["../../docs/api.md"] ?? "";
const DOCS = import.meta.glob<string>(["../../docs/*.md", "../../README.md"], { query: "?raw", import: "default", eager: true });

const mentions = (name: string) => API_DOC.includes(`\`${name}\``) || API_DOC.includes(`\`${name}*\``);

describe("docs/api.md", () => {
	it("has a section for every operation of the router", () => {
		const names = Object.keys(operations);
		expect(names.length).toBeGreaterThanOrEqual(16);
		const headings = new Set([...API_DOC.matchAll(/^### (\w+)$/gm)].map((m) => m[1]));
		expect(names.filter((name) => !headings.has(name))).toEqual([]);
	});

	it("names every request and answer field of the served document", async () => {
		const doc = (await (await request("/openapi.json")).json()) as any;
		const resolve = (s: any): any => (s?.$ref ? resolve(doc.components.schemas[s.$ref.split("/").pop()]) : s);
		const missing: string[] = [];
		for (const name of Object.keys(operations)) {
			const op = doc.paths[`/saas/v1_0/${name}`].post;
			const fields = [
				...Object.keys(resolve(op.requestBody.content["application/json"].schema).properties ?? {}),
				...Object.keys(resolve(op.responses["200"].content["application/json"].schema).properties ?? {}),
			];
			for (const field of fields) if (!mentions(field)) missing.push(`${name}.${field}`);
		}
		expect(missing).toEqual([]);
	});

	it("lists every error code", () => {
		expect(ERROR_CODES.filter((code) => !mentions(code))).toEqual([]);
	});

	it("is not alone: the README and docs point nowhere outside the repository", () => {
		expect(Object.keys(DOCS).length).toBeGreaterThan(5);
		const outside = Object.entries(DOCS).filter(([, text]) => text.includes("../shared"));
		expect(outside.map(([path]) => path)).toEqual([]);
	});
});
