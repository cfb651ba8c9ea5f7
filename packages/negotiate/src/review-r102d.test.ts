// r102d: a revoked Proxy given as a message, a tool entry or a tool's function, where the check
// asking whether it was an array threw the Proxy machinery's TypeError, naming nothing.
import { describe, expect, it } from "vitest";
import { buildBody, createCapabilityStore } from "./index.js";

const store = createCapabilityStore();
const supports = store.capabilitiesFor("http://127.0.0.1:1/v1");
const model = store.modelCapabilitiesFor(supports, "m");
const messages = [{ role: "user", content: "hi" }];

/** A Proxy of `target`, revoked: every question put to it throws, `Array.isArray` among them. */
function revoked(target: object = {}): never {
  const { proxy, revoke } = Proxy.revocable(target, {});
  revoke();
  return proxy as never;
}

/** A Proxy of `{ role: "user" }` whose every field's lookup throws, as a host's lazy message can be. */
const withheld = () =>
  new Proxy(
    { role: "user", content: "hi" },
    {
      getOwnPropertyDescriptor() {
        throw new Error("message withheld");
      },
    },
  ) as never;

/** What `build` threw, or a failure if it threw nothing. */
function thrownBy(build: () => unknown): Error {
  try {
    build();
  } catch (error) {
    return error as Error;
  }
  throw new Error("nothing was thrown");
}

describe("a message that cannot be read", () => {
  it("is refused as a TypeError naming the message and what it threw, where a revoked Proxy threw the Proxy machinery's error naming nothing", () => {
    const thrown = thrownBy(() =>
      buildBody({ model: "m" }, supports, model, [messages[0] as never, revoked()]),
    );
    expect(thrown).toBeInstanceOf(TypeError);
    expect(thrown.message).toMatch(
      /^buildBody: messages\[1\] could not be read \(TypeError: .*revoked.*\): JSON\.stringify would throw that while sending, naming nothing\.$/,
    );
    expect(thrown.cause).toBeInstanceOf(TypeError);
  });

  it("names a message whose role cannot be read (a Proxy whose trap throws) by its role, with the trap's error as its cause", () => {
    const thrown = thrownBy(() => buildBody({ model: "m" }, supports, model, [withheld()]));
    expect(thrown).toBeInstanceOf(TypeError);
    expect(thrown.message).toMatch(
      /^buildBody: messages\[0\]\.role could not be read \(Error: message withheld\)/,
    );
    expect((thrown.cause as Error).message).toBe("message withheld");
  });

  it("names a revoked Proxy given as the messages themselves", () => {
    const thrown = thrownBy(() => buildBody({ model: "m" }, supports, model, revoked([])));
    expect(thrown).toBeInstanceOf(TypeError);
    expect(thrown.message).toMatch(/^buildBody: messages could not be read \(TypeError: .*revoked/);
  });
});

describe("a tool entry that is a revoked Proxy", () => {
  it("is refused as a TypeError naming the entry and what it threw, where the Proxy machinery's error named nothing", () => {
    const fine = { type: "function", function: { name: "f" } } as never;
    const thrown = thrownBy(() => buildBody({ model: "m" }, supports, model, messages, [fine, revoked()]));
    expect(thrown).toBeInstanceOf(TypeError);
    expect(thrown.message).toMatch(
      /^buildBody: tools\[1\] could not be read \(TypeError: .*revoked.*\): JSON\.stringify would throw that while sending, naming nothing\.$/,
    );
    expect(thrown.cause).toBeInstanceOf(TypeError);
  });

  it("names a tool's function that is a revoked Proxy, and the tools themselves", () => {
    const tool = { type: "function", function: revoked() } as never;
    expect(() => buildBody({ model: "m" }, supports, model, messages, [tool])).toThrow(
      /^buildBody: tools\[0\]\.function could not be read \(TypeError: .*revoked/,
    );
    expect(() => buildBody({ model: "m" }, supports, model, messages, revoked([]))).toThrow(
      /^buildBody: tools could not be read \(TypeError: .*revoked/,
    );
  });
});
