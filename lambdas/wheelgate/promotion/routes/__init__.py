"""The routes: what the service does with each kind of request it routes, one module each.

A route takes a request that passed the service's writer check and returns what it decided
(:mod:`wheelgate.promotion.decisions`): a run's manifest (:mod:`.run`, :class:`RunRoute`), a
yank or unyank (:mod:`.yank`, :class:`YankRoute`), a break-glass override (:mod:`.override`,
:class:`OverrideRoute`) and an import (:mod:`.importing`, :class:`ImportRoute`, whose
machinery is the :mod:`wheelgate.promotion.importing` package). No route calls back into the
service.
"""
