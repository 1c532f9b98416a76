//! generated/actions.rs: the static action table, the categories, and name/alias lookup.

use proc_macro2::{Ident, Span, TokenStream};
use quote::quote;

use crate::ir::Catalog;
use crate::model::StreamKind;

pub fn emit(catalog: &Catalog, ranges: &[(usize, usize)]) -> TokenStream {
    let version = &catalog.version;
    let category_count = catalog.categories.len();
    let categories = catalog.categories.iter().map(|c| {
        let (id, name, description, count) = (&c.id, &c.name, &c.description, c.count);
        quote! { CategoryMeta { id: #id, name: #name, description: #description, count: #count } }
    });
    let action_count = catalog.actions.len();
    let actions = catalog.actions.iter().zip(ranges).map(|(a, (start, end))| {
        let name = &a.name;
        let aliases = &a.aliases;
        let category = a.category;
        let summary = &a.summary;
        let read_only = a.read_only;
        let sends = a.sends;
        let danger = match &a.danger {
            Some(danger) => quote! { Some(#danger) },
            None => quote! { None },
        };
        let stream = Ident::new(
            match a.stream {
                StreamKind::None => "None",
                StreamKind::Download => "Download",
                StreamKind::Upload => "Upload",
                StreamKind::Frames => "Frames",
            },
            Span::call_site(),
        );
        // The same list as the inputSchema's `required`: declared required, or refused when
        // absent by a check.
        let required = a
            .params
            .iter()
            .filter(|p| {
                p.required
                    || p.check
                        .as_deref()
                        .is_some_and(crate::schema::check_requires_presence)
            })
            .map(|p| &p.name);
        let check = Ident::new(&format!("check_{}", a.fn_ident), Span::call_site());
        let (start, end) = (*start as u32, *end as u32);
        quote! {
            ActionMeta {
                name: #name,
                aliases: &[#(#aliases),*],
                category: #category,
                summary: #summary,
                read_only: #read_only,
                danger: #danger,
                sends: #sends,
                stream: StreamKind::#stream,
                required: &[#(#required),*],
                contract: (#start, #end),
                check: super::params::#check,
            }
        }
    });
    let mut names: Vec<(String, usize, bool)> = Vec::new();
    for (i, a) in catalog.actions.iter().enumerate() {
        names.push((a.name.clone(), i, false));
        names.extend(a.aliases.iter().map(|alias| (alias.clone(), i, true)));
    }
    names.sort();
    let arms = names
        .iter()
        .map(|(name, index, alias)| quote! { #name => Some((#index, #alias)), });
    quote! {
        use crate::catalog::facade::*;

        /// The SnowLuma version the catalog describes.
        pub static CATALOG_VERSION: &str = #version;

        /// The catalog document (`snowluma://onebot/actions`).
        pub static CATALOG_JSON: &str = include_str!(concat!(env!("CARGO_MANIFEST_DIR"), "/generated/catalog.json"));

        pub static CATEGORIES: [CategoryMeta; #category_count] = [#(#categories),*];

        /// Every action, in category order, then by name.
        pub static ACTIONS: [ActionMeta; #action_count] = [#(#actions),*];

        /// The index of the action called `name`, and whether `name` is an alias.
        pub fn lookup(name: &str) -> Option<(usize, bool)> {
            match name {
                #(#arms)*
                _ => None,
            }
        }
    }
}
