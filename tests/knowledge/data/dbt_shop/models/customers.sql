select id as customer_id, name, country, cast(signed_up as date) as signed_up_on
from {{ ref('raw_customers') }}
