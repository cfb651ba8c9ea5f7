// What the masking of a server's credentials catches: the value in the forms servers and libraries
// write it back in, wherever it stands in the text, and nothing else.
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { ENCODINGS } from "../test/encodings.js";
import { masker, maskOutput, maskTool, redactError, resultSecretsOf, secretsOf } from "./redact.js";

/** Printable ASCII without `*` (the mask itself): what keys, tokens and passwords are made of. */
const secretChar = fc.constantFrom(
  ..."abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_./+=:@!$%&'\"(),;<>?[]\\^`{|}~ #",
);
const secret = fc.string({ unit: secretChar, minLength: 8, maxLength: 40 });
const text = fc.string({ maxLength: 30 });
/** Text before a credential; a lone backslash or `%` right before one would change what its first characters mean. */
const lead = text.filter((t) => !/[\\%]$/.test(t));

/** `{ next: { next: … { token } } }`, `levels` objects above the one with the token. */
const nested = (levels: number, token: string) => {
  let deep: unknown = { token };
  for (let i = 0; i < levels; i++) deep = { next: deep };
  return deep as Record<string, unknown>;
};
const depthOf = (value: unknown) => {
  let levels = 0;
  for (
    let at = value;
    typeof at === "object" && at !== null && "next" in at;
    at = (at as { next: unknown }).next
  )
    levels++;
  return levels;
};

describe("masker", () => {
  for (const [name, encode] of Object.entries(ENCODINGS)) {
    it(`masks a credential written ${name}, wherever it stands`, () => {
      fc.assert(
        fc.property(secret, lead, text, (value, before, after) => {
          const written = encode(value);
          const masked = masker([value])(`${before}${written}${after}`);
          expect(masked).toContain("***");
          expect(masked).not.toContain(written);
        }),
      );
    });
  }

  it("masks a form-encoded credential after a stray % and a hex digit, which the decoded reading misreads", () => {
    // `%0` then `a%28…`: decoding percent-escapes reads `%0a` as a line break and `%28` as `(`, so
    // the value is found only as its encoded form, written as it stands.
    const value = "aaaaaa(a";
    const form = new URLSearchParams({ v: value }).toString().slice(2);
    expect(form).toBe("aaaaaa%28a");
    expect(masker([value])(`%0${form}`)).toBe("%0***");
    expect(masker([value])(`x%0${form.toLowerCase()} y`)).toBe("x%0*** y");
  });

  it("masks a form-encoded credential with a space and non-ASCII characters whose hex mixes the cases", () => {
    // Decoding leaves `%C3%a9` (not ASCII) encoded and `+` a plus, so only the capitals reading
    // meets the form-encoded value.
    const value = "sk live é€ key!";
    let upper = true;
    const form = new URLSearchParams({ v: value })
      .toString()
      .slice(2)
      .replace(/%[0-9A-F]{2}/g, (code) => {
        upper = !upper;
        return upper ? code : code.toLowerCase();
      });
    expect(form).toBe("sk+live+%c3%A9%e2%82%ac+key%21");
    for (const before of ["q=x=", "%0", "%A"]) {
      expect(masker([value])(`${before}${form}&z=1`)).toBe(`${before}***&z=1`);
    }
  });

  it("masks a percent-encoded credential whose hex mixes the cases, after a stray % and hex digit (r49 F6)", () => {
    expect(masker(["a/b/c/d/e/f"])("x=%0a%2fb%2Fc%2fd%2Fe%2ff&y=1")).toBe("x=%0***&y=1");
    const percentWriters = Object.entries(ENCODINGS).filter(([name]) => /encoded/.test(name));
    fc.assert(
      fc.property(
        secret,
        fc.constantFrom("", "%", "%0", "%2", "%A", "q=%f"),
        fc.constantFrom(...percentWriters),
        fc.infiniteStream(fc.boolean()),
        (value, stray, [, encode], flips) => {
          const written = encode(value).replace(/%[0-9A-F]{2}/g, (code) =>
            flips.next().value ? code.toLowerCase() : code,
          );
          const masked = masker([value])(`${stray}${written} end`);
          expect(masked).toContain("***");
          expect(masked).not.toContain(written);
        },
      ),
    );
  });

  it("masks a credential wrapped at a line break anywhere in it", () => {
    fc.assert(
      fc.property(
        secret,
        fc.nat(),
        // Characters no credential here holds, so no match can start before the credential does.
        fc.string({ unit: fc.constantFrom("é", "中", "—"), maxLength: 10 }),
        (value, at, before) => {
          const cut = 1 + (at % (value.length - 1));
          const masked = masker([value])(`${before}${value.slice(0, cut)}\n${value.slice(cut)} end`);
          expect(masked).toBe(`${before}*** end`);
        },
      ),
    );
  });

  it("masks a credential base64-encoded at any alignment: no four of its bytes decode from what is left", () => {
    // Neighbours from bytes a credential never holds, so whatever decodes to its bytes came from it.
    const noise = fc.uint8Array({ maxLength: 7 }).map((a) => Buffer.from(a.map((b) => b | 0x80)));
    fc.assert(
      fc.property(secret, noise, noise, fc.boolean(), (value, before, after, urlSafe) => {
        const encoded = Buffer.concat([before, Buffer.from(value), after]).toString(
          urlSafe ? "base64url" : "base64",
        );
        const masked = masker([value])(encoded);
        for (const piece of masked.split("***")) {
          for (let offset = 0; offset < 4; offset++) {
            const decoded = Buffer.from(piece.slice(offset), "base64").toString("latin1");
            for (let i = 0; i + 4 <= value.length; i++) expect(decoded).not.toContain(value.slice(i, i + 4));
          }
        }
      }),
    );
  });

  it("masks a hex key in capitals, and leaves any other key in another case alone", () => {
    const mask = masker(["9f86d081884c7d659a2feaa0c55ad015", "Passw0rd-Xyz"]);
    expect(mask("key 9F86D081884C7D659A2FEAA0C55AD015 refused")).toBe("key *** refused");
    expect(mask("user PASSW0RD-XYZ")).toBe("user PASSW0RD-XYZ");
  });

  it("leaves text without the credential as it was", () => {
    fc.assert(
      fc.property(secret, fc.string({ maxLength: 200 }), (value, other) => {
        fc.pre(!other.includes(value[0] as string));
        expect(masker([value])(other)).toBe(other);
      }),
    );
  });

  it("takes a whole environment's values and a long certificate, and masks each", () => {
    const pem = `-----BEGIN PRIVATE KEY-----\n${"MIIEvQIBADANBgkqhkiG9w0BAQEFAASC".repeat(300)}\n-----END PRIVATE KEY-----`;
    const values = Array.from({ length: 200 }, (_, i) => `value-${i}-${"abcdefghij".repeat(1 + (i % 20))}`);
    const mask = masker([...values, pem]);
    expect(mask(`key ${JSON.stringify(pem)} and ${encodeURIComponent(values[199] as string)}.`)).toBe(
      'key "***" and ***.',
    );
  });

  it("takes a credential holding a lone surrogate, and masks it as written, JSON-escaped and percent-encoded (r67)", () => {
    // `encodeURIComponent` throws URIError on a lone surrogate: building the mask threw before.
    const value = "tok\ud800-0123456789abcdef";
    const mask = masker([value]);
    expect(mask(`a ${value} b`)).toBe("a *** b");
    expect(mask(`{"k":${JSON.stringify(value)}}`)).toBe('{"k":"***"}');
    const percent = new URLSearchParams({ v: value }).toString().slice(2);
    expect(percent).toContain("%EF%BF%BD");
    expect(mask(`?v=${percent}&x=1`)).toBe("?v=***&x=1");
    expect(masker(["\udfff-lone-low-surrogate-key"])("x \udfff-lone-low-surrogate-key")).toBe("x ***");
  });

  it("masks the longer of two credentials whole when one contains the other", () => {
    expect(masker(["abcd1234", "abcd1234efgh5678"])("x abcd1234efgh5678 y abcd1234 z")).toBe("x *** y *** z");
  });

  it("masks an HTTP server's Authorization token, and leaves the scheme word of the message alone", () => {
    const mask = masker(
      secretsOf({
        name: "remote",
        type: "http",
        url: "http://127.0.0.1:9/mcp",
        headers: { authorization: "Bearer tok-9f8e7d6c5b" },
      }),
    );
    expect(mask("HTTP 401: Bearer token expired; got Bearer tok-9f8e7d6c5b, then tok-9f8e7d6c5b")).toBe(
      "HTTP 401: Bearer token expired; got ***, then ***",
    );
  });
});

describe("redactError", () => {
  it("masks a secret in a cause that is a plain object, not only in an Error or a string", () => {
    const mask = masker(["sk-live-4f9a8b7c6d5e"]);
    const error = new Error("the server failed", { cause: { data: { echoed: "key sk-live-4f9a8b7c6d5e" } } });
    const kept = redactError(error, mask) as Error;
    expect(JSON.stringify(kept.cause)).not.toContain("sk-live-4f9a8b7c6d5e");
    expect(String(kept.cause)).toContain("***");
    // A value without a secret is kept as it was.
    const plain = { data: { echoed: "nothing to hide" } };
    expect(redactError(plain, mask)).toBe(plain);
  });
});

describe("resultSecretsOf", () => {
  it("keeps the credentials and leaves out values nobody takes for one, so a result stays readable", () => {
    const secrets = resultSecretsOf({
      name: "db",
      type: "stdio",
      command: "npx",
      args: ["server-postgres", "postgres://app:s3cret-pw@db.internal/app", "--api-key", "hunter"],
      env: {
        API_TOKEN: "a8f7c6e5d4b3a291",
        PASSWORD: "correct horse",
        LOG_LEVEL: "info",
        NODE_ENV: "production",
        DATA_DIR: "/srv/data/files",
        PORT: "8080",
        USE_AUTH: "false",
        API_BASE: "https://api.example/v1",
        CLIENT_ID: "Zq81kPx0vM",
      },
    });
    expect(secrets.sort()).toEqual(
      ["Zq81kPx0vM", "a8f7c6e5d4b3a291", "correct horse", "hunter", "s3cret-pw"].sort(),
    );
  });

  it("keeps an HTTP server's header token, URL password and query values, not a plain header word", () => {
    const secrets = resultSecretsOf({
      name: "remote",
      type: "http",
      url: "https://someone:pa55word-xyz@mcp.example/mcp?token=query-secret-123&region=eu",
      headers: { Authorization: "Bearer tok-9f8e7d6c5b", "X-Org": "acme" },
    });
    for (const value of ["pa55word-xyz", "query-secret-123", "tok-9f8e7d6c5b", "Bearer tok-9f8e7d6c5b"])
      expect(secrets).toContain(value);
    for (const value of ["acme", "eu", "Bearer", "someone"]) expect(secrets).not.toContain(value);
  });
});

describe("resultSecretsOf: which values of an entry a result is masked of", () => {
  /** [env name, value, whether a result is masked of it] */
  const TABLE: [string, string, boolean][] = [
    // Ordinary values: every piece a word, a number or a short token such as 4o.
    ["AWS_REGION", "us-east-1", false],
    ["AWS_DEFAULT_REGION", "eu-central-1", false],
    ["OPENAI_MODEL", "gpt-4o", false],
    ["MODEL", "llama-3.1-70b", false],
    ["LANG", "en_US.UTF-8", false],
    ["TZ", "Europe/Berlin", false],
    ["API_BASE", "https://api.example/v1/items", false],
    ["LOG_LEVEL", "info", false],
    // Credentials: under a telling name, or opaque wherever they stand.
    ["SLACK_WEBHOOK_URL", "https://hooks.slack.com/services/T000/B000/XXXX", true],
    ["SLACK_WEBHOOK", "https://hooks.slack.com/services/T0A1B2C3D/B0E4F5G6H/abcdEFGHijklMNOPqrstUVWX", true],
    ["DB_PASS", "sunshine", true],
    ["MYSQL_PASSWD", "sunshine", true],
    ["dbPass", "sunshine", true],
    ["AWS_ACCESS_KEY_ID", "AKIAIOSFODNN7EXAMPLE", true],
    ["AWS_SECRET_ACCESS_KEY", "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY", true],
    ["CLIENT_ID", "Zq81kPx0vM", true],
    ["REQUEST_ID", "550e8400-e29b-41d4-a716-446655440000", true],
    ["LICENSE", "ab12-cd34-ef56", true],
    ["ACCOUNT", "1234-5678-9012", true],
  ];
  for (const [name, value, secret] of TABLE) {
    it(`${name}=${value} is ${secret ? "masked" : "left as written"}`, () => {
      const secrets = resultSecretsOf({
        name: "aws",
        type: "stdio",
        command: "node",
        args: [],
        env: { [name]: value },
      });
      expect(secrets.includes(value)).toBe(secret);
    });
  }

  it("masks a value given under pass as a word in args (--pass X, -e DB_PASS=X, ?db_pass=X), not under --bypass-cache", () => {
    const server = {
      name: "db",
      type: "stdio" as const,
      command: "docker",
      args: [
        "run",
        "-e",
        "DB_PASS=sunshine",
        "--pass",
        "moonlight",
        "--smtp-pass=starlight",
        "--bypass-cache",
        "keep-me-42x",
        "https://db.example/?db_pass=query-pw-77",
      ],
      env: { GPG_PASSPHRASE: "daylight" },
    };
    for (const found of [secretsOf(server), resultSecretsOf(server)]) {
      for (const value of ["sunshine", "moonlight", "starlight", "query-pw-77", "daylight"])
        expect(found, value).toContain(value);
      expect(found).not.toContain("keep-me-42x");
    }
  });

  it("leaves a typical AWS entry's region readable in an ARN, and masks its keys", () => {
    const mask = masker(
      resultSecretsOf({
        name: "aws",
        type: "stdio",
        command: "uvx",
        args: ["awslabs.aws-api-mcp-server"],
        env: {
          AWS_REGION: "us-east-1",
          AWS_ACCESS_KEY_ID: "AKIAIOSFODNN7EXAMPLE",
          AWS_SECRET_ACCESS_KEY: "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
          AWS_PROFILE: "default",
        },
      }),
    );
    expect(mask("arn:aws:lambda:us-east-1:123456789012:function:hello by AKIAIOSFODNN7EXAMPLE")).toBe(
      "arn:aws:lambda:us-east-1:123456789012:function:hello by ***",
    );
  });
});

describe("maskOutput", () => {
  it("masks the text, the text parts and every string and key of structured content; keeps images", () => {
    const mask = masker(["sk-live-4f9a8b7c6d5e"]);
    const output = {
      ok: true,
      text: "key sk-live-4f9a8b7c6d5e",
      parts: [
        { type: "text" as const, text: "key sk-live-4f9a8b7c6d5e" },
        { type: "image_url" as const, image_url: { url: "data:image/png;base64,AAAA" } },
      ],
      images: [{ mimeType: "image/png", data: "AAAA" }],
      structured: { "sk-live-4f9a8b7c6d5e": [{ deep: "is sk-live-4f9a8b7c6d5e" }], n: 1 },
    };
    const masked = maskOutput(output, mask);
    expect(masked.text).toBe("key ***");
    expect(masked.parts).toEqual([{ type: "text", text: "key ***" }, output.parts[1]]);
    expect(masked.structured).toEqual({ "***": [{ deep: "is ***" }], n: 1 });
    expect(masked.images).toBe(output.images);
    // The output given is left as it was, and one without a secret comes back as it is.
    expect(output.text).toBe("key sk-live-4f9a8b7c6d5e");
    const clean = { ...output, text: "fine", parts: [], structured: { a: "b" } };
    expect(maskOutput(clean, mask)).toBe(clean);
  });

  it("masks every string and key of any JSON value as a plain recursive copy would, and keeps it when none holds the secret", () => {
    const SECRET = "sk-live-4f9a8b7c6d5e";
    const mask = masker([SECRET]);
    const copy = (value: unknown): unknown =>
      typeof value === "string"
        ? mask(value)
        : Array.isArray(value)
          ? value.map(copy)
          : typeof value === "object" && value !== null
            ? Object.fromEntries(Object.entries(value).map(([k, v]) => [mask(k), copy(v)]))
            : value;
    // Strings that now and then hold the secret, whole, percent-encoded or cut over a line break.
    const piece = fc.oneof(
      fc.string({ maxLength: 8 }),
      fc.constantFrom(SECRET, encodeURIComponent(`${SECRET}/`), `sk-live-\n4f9a8b7c6d5e`),
    );
    const withSecrets = fc.array(piece, { maxLength: 3 }).map((parts) => parts.join(""));
    const json = fc.letrec((tie) => ({
      value: fc.oneof(
        { depthSize: "small", withCrossShrink: true },
        withSecrets,
        fc.integer(),
        fc.boolean(),
        fc.constant(null),
        fc.array(tie("value"), { maxLength: 4 }),
        fc.dictionary(withSecrets, tie("value"), { maxKeys: 4 }),
      ),
    })).value;
    fc.assert(
      fc.property(fc.dictionary(withSecrets, json, { maxKeys: 4 }), (structured) => {
        const output = { ok: true, text: "", parts: [], images: [], structured };
        const masked = maskOutput(output, mask);
        expect(masked.structured).toEqual(copy(structured));
        if (!JSON.stringify(structured).includes("sk-live-")) expect(masked).toBe(output);
      }),
    );
  });

  it("replaces structured content deeper than it walks with a note, secret and all", () => {
    const masked = maskOutput(
      { ok: true, text: "", parts: [], images: [], structured: nested(1000, "sk-live-4f9a8b7c6d5e") },
      masker(["sk-live-4f9a8b7c6d5e"]),
    );
    expect(JSON.stringify(masked.structured)).not.toContain("sk-live-4f9a8b7c6d5e");
    expect(depthOf(masked.structured)).toBe(256);
    expect(JSON.stringify(masked.structured)).toContain(
      '"next":"[left out: nested more than 256 levels deep]"',
    );
  });

  it("walks structured content 100,000 levels deep without exhausting the stack", () => {
    const output = {
      ok: true,
      text: "",
      parts: [],
      images: [],
      structured: nested(100_000, "sk-live-4f9a8b7c6d5e"),
    };
    // No secret to mask: the output as it came, nothing walked.
    expect(maskOutput(output, masker([]))).toBe(output);
    expect(maskOutput(output, masker(["", "abc"]))).toBe(output);
    const masked = maskOutput(output, masker(["sk-live-4f9a8b7c6d5e"]));
    expect(depthOf(masked.structured)).toBe(256);
    expect(depthOf(output.structured)).toBe(100_000);
  });
});

describe("maskTool", () => {
  it("masks what the model is shown of a tool, keeps its name, and cuts a schema nested too deep", () => {
    const tool = {
      name: "sk-live-4f9a8b7c6d5e",
      description: "uses sk-live-4f9a8b7c6d5e",
      inputSchema: { type: "object", properties: nested(100_000, "sk-live-4f9a8b7c6d5e") },
    };
    const masked = maskTool(tool, masker(["sk-live-4f9a8b7c6d5e"]));
    expect(masked.name).toBe("sk-live-4f9a8b7c6d5e");
    expect(masked.description).toBe("uses ***");
    expect(depthOf(masked.inputSchema.properties)).toBe(254);
    expect(tool.description).toBe("uses sk-live-4f9a8b7c6d5e");
    // Nothing to mask, or nothing masked: the tool as listed.
    expect(maskTool(tool, masker([]))).toBe(tool);
    const plain = { name: "t", description: "fine", inputSchema: { type: "object" } };
    expect(maskTool(plain, masker(["sk-live-4f9a8b7c6d5e"]))).toBe(plain);
  });
});
