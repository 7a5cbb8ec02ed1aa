import Ajv2020 from "ajv/dist/2020.js";
import type { Middleware } from "openapi-fetch";

/**
 * Checks real responses against an OpenAPI document: the status must be
 * listed for that path and method, and the body must match its schema. A
 * response the document does not describe is a failure, so a document that
 * lies fails the test that uses this middleware.
 */
export function contractChecker(doc: any) {
	const ajv = new Ajv2020({ strict: false, validateFormats: false, allErrors: true });
	ajv.addSchema({ $id: "doc", components: doc.components }, "doc");
	const compiled = new Map<string, ReturnType<typeof ajv.compile>>();
	const checked: string[] = [];

	function schemaFor(path: string, method: string, status: number) {
		const operation = doc.paths[path]?.[method];
		if (!operation) throw new Error(`${method.toUpperCase()} ${path} is not in the document`);
		const response = operation.responses[String(status)] ?? operation.responses[`${String(status)[0]}XX`] ?? operation.responses.default;
		if (!response) throw new Error(`${method.toUpperCase()} ${path} answered ${status}, which the document does not list`);
		const schema = response.content?.["application/json"]?.schema;
		if (!schema) throw new Error(`${method.toUpperCase()} ${path} ${status} has no JSON schema in the document`);
		return schema;
	}

	/** Throws unless `body` is what the document says `method path` answers with `status`. */
	function check(path: string, method: string, status: number, body: unknown) {
		const key = `${method} ${path} ${status}`;
		let validate = compiled.get(key);
		if (!validate) {
			// Local refs (#/components/...) point into the document registered as "doc".
			const schema = JSON.parse(JSON.stringify(schemaFor(path, method, status)).replaceAll('"#/components/', '"doc#/components/'));
			validate = ajv.compile(schema);
			compiled.set(key, validate);
		}
		if (!validate(body)) {
			throw new Error(`${key}: the response does not match the document: ${ajv.errorsText(validate.errors)}\n${JSON.stringify(body)}`);
		}
		checked.push(key);
	}

	const middleware: Middleware = {
		async onResponse({ request, response, schemaPath }) {
			check(schemaPath, request.method.toLowerCase(), response.status, await response.clone().json());
			return response;
		},
	};
	return { check, middleware, checked };
}
