"""Small helpers with no trusteval dependency, each used by more than one package.

`asyncrun` (a coroutine run from sync code, also inside a notebook's loop), `folders` (the default store and cache
folders), `lazyseq` (a sequence read again on every pass) and `limits` (the numeric bounds shared by
the run spec and the backends' options).
"""
