"""ClickHouse: plain reads, its functions and their combinators, and its side doors shut.

- **Functions**: those sqlglot knows and ClickHouse's own plain ones it does not
  (:data:`_KNOWN`), with an aggregate's combinators (``sumIf``, ``uniqExactIf``,
  ``groupArrayDistinct``, ``avgOrNull``); any other name is refused: ``dictGet`` reads
  dictionaries (which may load from other databases), ``getSetting`` the server's settings.
- ``url()``, ``file()``, ``s3()``, ``remote()``, ``executable()`` and their kin are refused by
  the shared file rules; ``SETTINGS`` (which can lift the statement's limits) and ``FORMAT``
  by the shared clause rules; ``INTO OUTFILE`` as ``SELECT … INTO``.
- ``LIMIT n BY cols`` (at most n rows per group) is no row cap: the guard caps the whole
  result around it (see :func:`relay_nb.sql.guard.limit.wrap_uncounted_limit`);
  ``WITH 100 AS n`` names a value, never a table.
"""

from __future__ import annotations

from relay_nb.sql.guard.policies.base import PlainReadPolicy

__all__ = ["ClickHousePolicy"]

_KNOWN = frozenset(
    {
        "adddays", "addhours", "addminutes", "addmonths", "addweeks", "addyears", "anyheavy",
        "anyif", "anylast", "argmaxif", "argminif", "arrayall", "arrayavg", "arraycount",
        "arraycumsum", "arraydifference", "arrayelement", "arrayenumerate",
        "arrayenumerateuniq", "arrayexists", "arrayfirst", "arrayflatten", "arrayindex",
        "arraylast", "arraypushback", "arraypushfront", "arrayreduce", "arrayreversesort",
        "arraysort", "arraystringconcat", "arrayuniq", "arrayzip", "assumenotnull", "avgif",
        "bar", "base64decode", "base64encode", "concatwithseparator", "countdistinct",
        "countequal", "covarsamp", "cuturlparameter", "domain", "domainwithoutwww", "empty",
        "extract", "extractall", "extracturlparameter", "formatreadablequantity",
        "formatreadablesize", "formatreadabletimedelta", "fromunixtimestamp", "generateuuidv4",
        "grouparray", "grouparrayif", "grouparrayinsertat", "grouparraysorted", "groupbitmap",
        "groupuniqarray", "hasall", "hasany", "indexof", "intdiv", "inthash32", "inthash64",
        "isfinite", "isnotnull", "isnull", "jsonextract", "jsonextractarrayraw",
        "jsonextractbool", "jsonextractfloat", "jsonextractint", "jsonextractkeys",
        "jsonextractuint", "jsonhas", "jsonlength", "jsontype", "laginframe", "leadinframe",
        "lowcardinalityindices", "lowerutf8", "mapcontains", "mapkeys", "mapvalues", "maxif",
        "maxmap", "medianexact", "minif", "minmap", "modulo", "multiif", "multisearchany",
        "murmurhash3_64", "notempty", "now", "now64", "parsedatetimebesteffort",
        "parsedatetimebesteffortornull", "path", "positioncaseinsensitive", "positionutf8",
        "protocol", "quantileexact", "quantileif", "quantiles", "quantilesexact",
        "quantiletdigest", "rand64", "randuniform", "range", "replaceall", "replaceone",
        "replaceregexpall", "replaceregexpone", "retention", "roundbankers", "sequencecount",
        "sequencematch", "simplejsonextractstring", "simplelinearregression", "siphash64",
        "splitbychar", "stddevpop", "stddevsamp", "substringutf8", "subtractdays",
        "subtracthours", "subtractmonths", "sumarray", "sumif", "summap", "timeslot", "todate",
        "todate32", "todateornull", "todatetime", "todatetime64", "todatetimeornull", "today",
        "todayofmonth", "todayofyear", "todecimal64", "tofixedstring", "tofloat64",
        "tofloat64ornull", "tohour", "toint32", "toint32ornull", "toint64", "tominute",
        "tomonth", "tonullable", "topk", "topkweighted", "topleveldomain", "torelativedaynum",
        "torelativemonthnum", "tostartoffifteenminutes", "tostartoffiveminutes",
        "tostartofinterval", "tostartofweek", "tostring", "touint32", "touint64",
        "tounixtimestamp", "touuid", "toyear", "toyyyymm", "toyyyymmdd", "transform",
        "tupleelement", "datename", "age", "uniqcombined", "uniqexact", "uniqexactif",
        "uniqhll12", "uniqif",
        "uniqtheta", "untuple", "upperutf8", "varpop", "varsamp", "visitparamextractstring",
        "windowfunnel", "xxhash64", "yesterday"
    }
)  # fmt: skip

_AGGREGATES = frozenset(
    {
        "count", "sum", "avg", "min", "max", "any", "anylast", "anyheavy", "argmin", "argmax",
        "uniq", "uniqexact", "uniqcombined", "uniqhll12", "grouparray", "groupuniqarray",
        "quantile", "quantiles", "quantileexact", "quantiletdigest", "median", "stddevpop",
        "stddevsamp", "varpop", "varsamp", "corr", "covarsamp", "topk", "summap",
        "grouparraysorted",
    }
)  # fmt: skip
_COMBINATORS = ("if", "distinct", "ornull", "ordefault", "array", "foreach", "state", "merge")


class ClickHousePolicy(PlainReadPolicy):
    name = "clickhouse"
    dialects = ("clickhouse",)
    known_functions = _KNOWN
    per_group_limit = True

    @classmethod
    def knows(cls, name: str) -> bool:
        """Also an aggregate with combinators: ``uniqExactIf`` is ``uniqExact`` + ``If``."""
        if super().knows(name):
            return True
        base = name
        while True:
            stripped = next((base[: -len(c)] for c in _COMBINATORS if base.endswith(c)), None)
            if not stripped:
                return False
            base = stripped
            if base in _AGGREGATES:
                return True
