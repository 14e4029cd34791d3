"""The PostgreSQL backend: search, jobs and live events on a server many processes share."""
