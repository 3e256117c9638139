// Package redisstore is memex's Redis memory plugin (SPEC §6): a
// core.MemoryPlugin over a go-redis v9 UniversalClient (one server,
// Sentinel or Cluster). Every key of a project shares the hash tag
// {project}, so each write is one atomic, cluster-safe Lua script that
// dedupes the write's event id and commits only if the records it read are
// unchanged; trust is computed in Go by package trust, relevance by package
// retrieval over posting lists kept in Redis. docs/REDIS.md describes the
// key schema, the scripts and the recommended Redis profile.
package redisstore
