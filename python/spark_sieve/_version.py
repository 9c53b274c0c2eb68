# The one place the version lives: build.sbt reads it for the jar, the wheel reads it for itself.
__version__ = "0.1.0"
