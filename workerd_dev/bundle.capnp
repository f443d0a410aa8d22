@0xb7e3c9a14d2f6e81;
# The Pyodide runtime bundle that workerd loads for its `dev` Python release
# (compatibility flag python_workers_development), written by workerd_dev/pyodide_bundle.py.
#
# The structures are wire-compatible with workerd's `Bundle` and `Module`
# (src/workerd/jsg/modules.capnp): the same field numbers and types, so the message
# this file describes is one workerd reads. Only the parts a runtime bundle uses are
# named here; the struct and file ids are this project's own.

struct Bundle {
  modules @0 :List(Module);
}

struct Module {
  name @0 :Text;
  union {
    src @1 :Data;   # JavaScript (an ES module)
    wasm @4 :Data;  # a WebAssembly module
    data @5 :Data;  # bytes, imported as an ArrayBuffer
    json @6 :Text;
  }
  tsDeclaration @3 :Text;
  type @2 :ModuleType;
  compileCache @7 :Data;
}

enum ModuleType {
  bundle @0;
  builtin @1;
  internal @2;  # importable only by the runtime's own modules
}

# The three modules workerd's Python runtime imports from a bundle; the files are
# written beside a copy of this schema before `capnp eval` reads it.
const dev :Bundle = (modules = [
  (name = "pyodideRuntime-internal:pyodide.asm", src = embed "pyodide.asm.mjs", type = internal),
  (name = "pyodideRuntime-internal:pyodide.asm.wasm", wasm = embed "pyodide.asm.wasm", type = internal),
  (name = "pyodideRuntime-internal:python_stdlib.zip", data = embed "python_stdlib.zip", type = internal),
]);
