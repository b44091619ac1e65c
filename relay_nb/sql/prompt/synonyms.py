"""The built-in glossary: words a question uses for what schemas usually name otherwise.

Each group is a set of interchangeable words (``client`` asks for ``customers``; ``nation``
for ``country``), and a demonym points at its place (``dutch`` -> ``netherlands``), so a
question matches the schema's words and the values profiling found. Data, not code, as
sqlglot keeps its corpora: a group is one line to add. A team's own words belong in its
knowledge file (``synonyms:``), which extends this at question time.
"""

from __future__ import annotations

__all__ = ["DEMONYMS", "SYNONYM_GROUPS"]

SYNONYM_GROUPS: tuple[frozenset[str], ...] = tuple(
    frozenset(line.split())
    for line in """
        customer client buyer consumer purchaser patron shopper
        country nation
        state province
        city town
        region area territory zone district
        employee staff worker personnel
        manager supervisor boss
        salary wage pay compensation earnings
        department division dept
        company firm organization organisation business enterprise corporation
        supplier vendor provider
        product item article merchandise goods sku
        order purchase
        price cost
        revenue sales turnover income
        amount total sum
        quantity qty
        invoice bill
        payment transaction
        shipment delivery shipping
        address location
        phone telephone mobile
        email mail
        shop store outlet
        student pupil learner
        teacher instructor lecturer professor tutor faculty
        course class subject module
        grade mark score
        doctor physician
        car automobile vehicle auto
        maker manufacturer make brand
        movie film picture
        director filmmaker
        actor actress performer
        singer vocalist artist musician
        song track tune
        book publication
        author writer
        language tongue
        airline carrier
        flight trip
        airport airfield
        pet animal
        dog canine puppy
        cat feline kitten
        player athlete
        team club squad
        game match
        hotel lodging accommodation
        guest visitor
        user member account
        age old
        birthday birth dob
        date day
        year annual yearly
        month monthly
        gender sex
        category type kind class
        population inhabitants residents people
        museum gallery
        church temple
        restaurant eatery
        rating review stars
        """.strip().splitlines()
    if line.split()
)
"""Groups of words folded the ranker's way at load (plurals and case need no entry)."""

DEMONYMS: dict[str, tuple[str, ...]] = {
    "american": ("usa", "america"),
    "british": ("uk", "britain", "england"),
    "english": ("england", "english", "uk"),
    "dutch": ("netherlands", "holland", "dutch"),
    "french": ("france", "french"),
    "german": ("germany", "german"),
    "spanish": ("spain", "spanish"),
    "italian": ("italy", "italian"),
    "chinese": ("china", "chinese"),
    "japanese": ("japan", "japanese"),
    "korean": ("korea", "korean"),
    "indian": ("india",),
    "brazilian": ("brazil",),
    "canadian": ("canada",),
    "mexican": ("mexico",),
    "australian": ("australia",),
    "swiss": ("switzerland",),
    "swedish": ("sweden",),
    "norwegian": ("norway",),
    "danish": ("denmark",),
    "finnish": ("finland",),
    "polish": ("poland",),
    "greek": ("greece",),
    "turkish": ("turkey",),
    "irish": ("ireland",),
    "portuguese": ("portugal",),
    "russian": ("russia",),
    "belgian": ("belgium",),
    "austrian": ("austria",),
    "european": ("europe",),
    "asian": ("asia",),
    "african": ("africa",),
}
"""A people's or language's word -> the place words a value column would hold."""
