"""What the Mongo guard lets through, as data: stage and operator allowlists, refusals.

An allowlist, not a denylist: a stage or ``$``-operator missing here is refused, so a new
server feature (or a misspelling) reaches the model as a clear error instead of reaching the
server unchecked. The lists follow MongoDB 8.0's aggregation and query operator reference,
minus everything that runs JavaScript, writes, or reads outside the queried database.

``REFUSED`` names are refused *anywhere* in a query tree, with their own rule, even where
the server would reject them anyway (a ``$where`` inside ``$literal``): the guard does not
reason about positions it does not need to.
"""

from __future__ import annotations

__all__ = ["OPERATORS", "REFUSED", "STAGES"]

_STAGES = """
    $match $project $group $sort $limit $skip $unwind $count $addFields $set $unset
    $lookup $graphLookup $unionWith $facet $bucket $bucketAuto $sortByCount
    $replaceRoot $replaceWith $sample $redact $setWindowFields $densify $fill $geoNear
"""
STAGES: frozenset[str] = frozenset(_STAGES.split())
"""Read-only pipeline stages on the queried database's collections."""

REFUSED: dict[str, str] = {
    **dict.fromkeys(("$where", "$function", "$accumulator"), "javascript"),
    **dict.fromkeys(("$out", "$merge"), "write_stage"),
    **dict.fromkeys(
        (
            "$currentOp",
            "$changeStream",
            "$changeStreamSplitLargeEvent",
            "$listSessions",
            "$listLocalSessions",
            "$collStats",
            "$indexStats",
            "$planCacheStats",
            "$listSearchIndexes",
            "$listSampledQueries",
            "$queryStats",
            "$shardedDataDistribution",
            "$querySettings",
            "$listClusterCatalog",
            "$listCatalog",
        ),
        "admin_stage",
    ),
}
"""Operator -> rule: JavaScript (runs code on the server), writes, server introspection."""

_QUERY = """
    $eq $ne $gt $gte $lt $lte $in $nin $and $or $nor $not $exists $type $regex $options
    $elemMatch $size $all $mod $expr $jsonSchema $text $search $language $caseSensitive
    $diacriticSensitive $comment $bitsAllSet $bitsAllClear $bitsAnySet $bitsAnyClear
    $geoWithin $geoIntersects $near $nearSphere $geometry $box $center $centerSphere
    $polygon $maxDistance $minDistance $slice $meta $natural $sampleRate
"""

_EXPRESSIONS = """
    $abs $add $ceil $divide $exp $floor $ln $log $log10 $multiply $pow $round $sqrt
    $subtract $trunc $sin $cos $tan $asin $acos $atan $atan2 $asinh $acosh $atanh $sinh
    $cosh $tanh $degreesToRadians $radiansToDegrees $arrayElemAt $arrayToObject
    $concatArrays $filter $first $firstN $indexOfArray $isArray $last $lastN $map $maxN
    $minN $objectToArray $range $reduce $reverseArray $sortArray $zip $cmp $cond $ifNull
    $switch $dateAdd $dateDiff $dateFromParts $dateFromString $dateSubtract $dateToParts
    $dateToString $dateTrunc $dayOfMonth $dayOfWeek $dayOfYear $hour $isoDayOfWeek
    $isoWeek $isoWeekYear $millisecond $minute $month $second $week $year $literal
    $getField $setField $unsetField $mergeObjects $allElementsTrue $anyElementTrue
    $setDifference $setEquals $setIntersection $setIsSubset $setUnion $concat $indexOfBytes
    $indexOfCP $ltrim $regexFind $regexFindAll $regexMatch $replaceOne $replaceAll $rtrim
    $split $strLenBytes $strLenCP $strcasecmp $substr $substrBytes $substrCP $toLower
    $toString $trim $toUpper $convert $isNumber $toBool $toDate $toDecimal $toDouble
    $toInt $toLong $toObjectId $toUUID $binarySize $bsonSize $let $rand $tsIncrement
    $tsSecond $bitAnd $bitOr $bitXor $bitNot $toHashedIndexKey
"""

_ACCUMULATORS = """
    $addToSet $avg $bottom $bottomN $count $max $median $min $percentile $push $stdDevPop
    $stdDevSamp $sum $top $topN $covariancePop $covarianceSamp $denseRank $derivative
    $documentNumber $expMovingAvg $integral $linearFill $locf $rank $shift
"""

OPERATORS: frozenset[str] = frozenset((_QUERY + _EXPRESSIONS + _ACCUMULATORS).split())
"""Query, expression, accumulator and window operators (the ``$``-keys inside stages)."""
