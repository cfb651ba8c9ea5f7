import { protoless } from "../protoless.js";

/**
 * `list` behind a Proxy that counts how often one of its places (an index key, a hole or an entry)
 * is read or looked up (`list[i]`, `i in list`). A walk by the places a sparse list holds reads
 * each entry a few times; a walk by its length reads every hole, millions of times: a count a test
 * can assert on where a bound in milliseconds breaks on a loaded machine.
 */
export function countedPlaces<T extends object>(list: T): { list: T; reads: () => number } {
  let reads = 0;
  const place = (key: string | symbol) => typeof key === "string" && /^(?:0|[1-9]\d*)$/.test(key);
  // No prototype on the handler: a trap is read through it, as the repository's check-descriptors says.
  const counted = new Proxy(
    list,
    protoless({
      get(target, key, receiver) {
        if (place(key)) reads++;
        return Reflect.get(target, key, receiver);
      },
      has(target, key) {
        if (place(key)) reads++;
        return Reflect.has(target, key);
      },
    }) as ProxyHandler<T>,
  );
  return { list: counted, reads: () => reads };
}
