"""The paths: each backend prepares a problem once (operator, factor, features) and walks its
C (or nu) grid on it, each solve started from the last solution, through the engines."""
