"""The development kit: the embedded broker and worker, the live demo and the seeded demo.

It serves `make demo` and the tests. The product (`offsets`, `dashboard`) never imports it
(tests/architecture/test_devkit_boundary.py checks), and the production image leaves it out.
"""
