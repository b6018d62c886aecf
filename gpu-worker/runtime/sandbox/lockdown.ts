/**
 * Run in the sandbox once the environment's module has loaded, before any episode: every object
 * reachable from the global object (the ECMAScript intrinsics, the console, the driver) is frozen,
 * the global object included, so no episode can change what a later episode of the same
 * environment sees — `Object.prototype.x = 1` or a new global throws a TypeError at the user's line
 * instead of leaking into the next episode, and results never depend on episode order. (SES's
 * `lockdown()` does the same for the same reason.) What the module set up at load time is shared
 * by every episode alike.
 *
 * Freezing a prototype turns its data properties read-only, and JavaScript then refuses plain
 * assignment of a same-named property on instances too (the "override mistake"): `this.name = …`
 * in an Error subclass, or `obj.toString = …`. Those few properties become accessors first, whose
 * setter defines the property on the instance, as SES's "moderate" taming does.
 */
export const LOCKDOWN_SOURCE = `(() => {
  'use strict';
  const overridable = [
    [Object.prototype, ['constructor', 'toString', 'toLocaleString', 'valueOf', 'hasOwnProperty']],
    [Function.prototype, ['constructor', 'toString', 'name']],
    [Error.prototype, ['constructor', 'name', 'message', 'toString']],
    [Array.prototype, ['constructor', 'toString', 'toLocaleString', 'join', 'push', 'concat']],
    [Promise.prototype, ['constructor', 'then']],
  ];
  for (const [proto, names] of overridable) {
    for (const name of names) {
      const d = Object.getOwnPropertyDescriptor(proto, name);
      if (!d || !('value' in d) || !d.configurable) continue;
      const value = d.value;
      Object.defineProperty(proto, name, {
        get() { return value; },
        set(next) {
          if (this === proto) throw new TypeError('Cannot assign to ' + name + ' of a built-in prototype: built-ins are frozen so that episodes stay independent');
          Object.defineProperty(this, name, { value: next, writable: true, enumerable: true, configurable: true });
        },
        enumerable: d.enumerable,
        configurable: false,
      });
    }
  }
  const seen = new Set();
  const harden = (o) => {
    if (o === null || (typeof o !== 'object' && typeof o !== 'function') || seen.has(o)) return;
    seen.add(o);
    Object.freeze(o);
    harden(Object.getPrototypeOf(o));
    for (const key of Reflect.ownKeys(o)) {
      const d = Object.getOwnPropertyDescriptor(o, key);
      if ('value' in d) harden(d.value);
      else { harden(d.get); harden(d.set); }
    }
  };
  harden(globalThis);
})();`;
