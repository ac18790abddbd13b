"""The compiled record walk (wire/_record_walk.pyx), built with the machine's C compiler by
`pip install`. Optional: where it cannot be built, wire/record_validation.py runs the same walk
in Python (wire/record_walk.py), slower. Everything else is declared in pyproject.toml."""

from Cython.Build import cythonize
from setuptools import Extension, setup

setup(ext_modules=cythonize([Extension("wire._record_walk", ["wire/_record_walk.pyx"], optional=True)],
                            compiler_directives={"language_level": "3"}))
