"""Real parts the tests run against: a throwaway PostgreSQL server, a schematool-built database."""
