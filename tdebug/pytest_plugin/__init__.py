"""tdebug as a pytest plugin (`pytest --tdebug`, registered through the pytest11 entry point): each test's
Triton launches under the interpreter sanitizer, findings failing the test that caused them, crashes and
hangs confined to their test, the catalogue's case matrix as tests. Nothing in tdebug imports it."""
